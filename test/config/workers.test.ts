// The config fields of the multi-process setup: "workers" (1 to 64) and "limitsFile" (where the
// in-process limiter keeps its state; not together with "limits"). --workers, PETSTORE_WORKERS
// and the rule that more than one worker needs both backends are tested on the bundle
// (test/bundle/workers.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../src/config/index.js';

const problems = (raw: unknown): readonly string[] => {
  try {
    parseConfig(raw, 'test.json', '/srv');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

test('workers: 1 by default, 1 to 64 accepted, anything else refused naming the field', () => {
  assert.equal(parseConfig({}, 'x', '/srv').workers, 1);
  assert.equal(parseConfig({ workers: 1 }, 'x', '/srv').workers, 1);
  assert.equal(parseConfig({ workers: 64 }, 'x', '/srv').workers, 64);
  for (const bad of [0, 65, -1, 2.5, '2', null, true]) {
    assert.deepEqual(problems({ workers: bad }), [`workers must be an integer from 1 to 64, got ${JSON.stringify(bad)}`], String(bad));
  }
});

test('limitsFile: resolved against the config directory, refused with limits', () => {
  assert.equal(parseConfig({}, 'x', '/srv').limitsFile, undefined);
  assert.equal(parseConfig({ limitsFile: 'state/limits.json' }, 'x', '/srv').limitsFile, '/srv/state/limits.json');
  assert.equal(parseConfig({ limitsFile: '/var/lib/petstore/limits.json' }, 'x', '/srv').limitsFile, '/var/lib/petstore/limits.json');
  assert.deepEqual(problems({ limitsFile: '' }), ['limitsFile must be a non-empty string, got ""']);
  assert.deepEqual(problems({ limitsFile: 'l.json', limits: 'redis://h:6379/0' }), ['limitsFile and limits cannot both be given: the limits live in Redis or in a file']);
});
