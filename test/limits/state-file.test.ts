// The saved limiter state (<dataFile>.limits.json) is checked like the config: bounded,
// finite, integers where the service writes integers, so a hand-edited or damaged file cannot
// give a key more than its plan or break the limiter's arithmetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLimiterState } from '../../src/limits/state.js';
import { KEYS, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { keyDigest } from '../../src/config/index.js';

const GOOD = { id: 'a'.repeat(64), perMinute: 60, perDay: 1000, minute: 12.5, day: 900, strikes: 3, banMs: 1500.25 };

function state(entry: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown {
  return { version: 1, savedAt: Date.UTC(2026, 0, 1), entries: [entry], ...extra };
}

test('a snapshot the service writes is accepted (fractional tokens and ban time)', () => {
  const parsed = parseLimiterState(state(GOOD));
  assert.deepEqual(parsed.entries[0], GOOD);
});

test('the extremes the config allows are accepted', () => {
  const extreme = { ...GOOD, perMinute: 1e12, perDay: 1e12, minute: 1e12, day: 0, banMs: 31_536_000_000 };
  assert.deepEqual(parseLimiterState(state(extreme)).entries[0], extreme);
});

const bad: Array<[string, unknown, RegExp]> = [
  ['banMs 1e308', state({ ...GOOD, banMs: 1e308 }), /entries\[0\]\.banMs/],
  ['banMs over a year', state({ ...GOOD, banMs: 31_536_000_001 }), /entries\[0\]\.banMs/],
  ['banMs negative', state({ ...GOOD, banMs: -1 }), /entries\[0\]\.banMs/],
  ['perMinute 1e300', state({ ...GOOD, perMinute: 1e300 }), /entries\[0\]\.perMinute/],
  ['perMinute above 10^12', state({ ...GOOD, perMinute: 1e12 + 1 }), /entries\[0\]\.perMinute/],
  ['perDay fractional', state({ ...GOOD, perDay: 1000.5 }), /entries\[0\]\.perDay/],
  ['perDay 0', state({ ...GOOD, perDay: 0 }), /entries\[0\]\.perDay/],
  ['minute above the capacity', state({ ...GOOD, minute: 61 }), /entries\[0\]\.minute/],
  ['day above the capacity', state({ ...GOOD, day: 1e308 }), /entries\[0\]\.day/],
  ['strikes fractional', state({ ...GOOD, strikes: 2.5 }), /entries\[0\]\.strikes/],
  ['strikes beyond the safe integers', state({ ...GOOD, strikes: 2 ** 60 }), /entries\[0\]\.strikes/],
  ['strikes a string', state({ ...GOOD, strikes: '3' }), /entries\[0\]\.strikes/],
  ['id empty', state({ ...GOOD, id: '' }), /entries\[0\]\.id/],
  ['id of 10,000 characters', state({ ...GOOD, id: 'x'.repeat(10_000) }), /entries\[0\]\.id/],
  ['savedAt 1e308', state(GOOD, { savedAt: 1e308 }), /savedAt/],
  ['savedAt negative', state(GOOD, { savedAt: -1 }), /savedAt/],
];
for (const [name, value, field] of bad) {
  test(`refused: ${name}`, () => {
    assert.throws(() => parseLimiterState(value), (err: Error) => field.test(err.message));
  });
}

test('a hand-edited banMs of 1e308 stops the start with the file and the field named, never Retry-After: 1e+305', async () => {
  const dir = tempDir();
  const config = writeConfig(dir, testConfig());
  const data = join(dir, 'pets.json');
  const limitsFile = `${data}.limits.json`;
  const entry = { ...GOOD, id: keyDigest(KEYS.free), banMs: 1e308 };
  writeFileSync(limitsFile, JSON.stringify(state(entry, { savedAt: Date.now() })));
  let srv;
  try {
    srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  } catch (err) {
    const message = String(err);
    assert.match(message, /exited with 1 before ready/);
    assert.ok(message.includes(limitsFile), message);
    assert.match(message, /entries\[0\]\.banMs/);
    assert.doesNotMatch(message, /\n\s+at /, 'no stack trace');
    return;
  }
  try {
    const res = await fetch(`${srv.url}/pets`, { headers: { authorization: `Bearer ${KEYS.free}` } });
    assert.fail(`the service started; a client got ${res.status} with Retry-After: ${res.headers.get('retry-after')}`);
  } finally {
    await srv.stop();
  }
});
