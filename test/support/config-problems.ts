// The problems parseConfig lists for a config, or none: shared by the config tests.
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../src/config/index.js';

export function problems(raw: unknown): string[] {
  try {
    parseConfig(raw, 'test.json', '/srv');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return [...err.problems];
  }
  return [];
}
