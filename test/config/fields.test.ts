// The table of config fields (src/config/fields.ts) tells the truth: its defaults are what
// parseConfig gives a config without the field, `applied` is what a reload really applies,
// and every field it lists is accepted while any other is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_FIELDS, parseConfig, type Config } from '../../src/config/index.js';
import { restartOnlyChanges } from '../../src/server/lifecycle.js';
import { problems } from '../support/config-problems.js';

const names = Object.keys(CONFIG_FIELDS) as (keyof typeof CONFIG_FIELDS)[];

/** A parsed value in the file's JSON form: Maps as objects (plans), keys as their count. */
function asJson(value: unknown): unknown {
  if (value instanceof Map) return Object.fromEntries(value);
  return value;
}

test('every default in the table is what parseConfig gives a config without the field', () => {
  const parsed = parseConfig({}, 'x', '/srv') as unknown as Record<string, unknown>;
  for (const name of names) {
    if (name === '$schema') continue; // not kept: the service ignores it
    const field: { default: unknown } = CONFIG_FIELDS[name];
    if (name === 'keys') {
      assert.equal((parsed.keys as Config['keys']).size, 0, 'keys: none by default');
      continue;
    }
    assert.deepEqual(asJson(parsed[name]), field.default, `default of ${name}`);
  }
});

test('every field of the table is accepted, and a field not in it is refused', () => {
  for (const name of names) {
    assert.ok(!problems({ [name]: null, bogus: 1 }).includes(`unknown top-level field "${name}"`), `${name} is a known field`);
  }
  assert.ok(problems({ bogus: 1 }).includes('unknown top-level field "bogus"'));
});

test('`applied` is what a reload applies: restart fields are exactly those a reload reports as ignored', () => {
  const base = parseConfig({}, 'x', '/srv');
  for (const name of names) {
    if (name === '$schema') continue;
    const changed = { ...base, [name]: { changed: true } } as unknown as Config;
    const ignored = restartOnlyChanges(base, changed).includes(name);
    assert.equal(ignored, CONFIG_FIELDS[name].applied === 'restart', `${name}: applied at ${CONFIG_FIELDS[name].applied}`);
  }
});
