// Plans are looked up as own entries only: a plan named after an Object.prototype member
// is not a plan unless the config defines it (a key with plan "toString" is refused at start,
// not a 500 on every request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/index.js';
import { call, startBundle, tempDir, writeConfig } from '../support/bundle.js';
import { problems } from '../support/config-problems.js';

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];


for (const name of PROTOTYPE_NAMES) {
  test(`plan "${name}" is unknown when the config has no plans field (default plans)`, () => {
    const found = problems({ keys: [{ key: 'abc', plan: name }] });
    assert.ok(found.some((p) => p.includes(`plan "${name}" is not a known plan`)), JSON.stringify(found));
  });

  test(`plan "${name}" is unknown when the config has plans that do not name it`, () => {
    const found = problems({ plans: { free: { perMinute: 1, perDay: 2 } }, keys: [{ key: 'abc', plan: name }] });
    assert.ok(found.some((p) => p.includes(`plan "${name}" is not a known plan`)), JSON.stringify(found));
  });

  test(`plan "${name}" works when the config defines it`, () => {
    // JSON.parse makes "__proto__" an own member, as a config file would.
    const raw: unknown = JSON.parse(`{"plans":{"${name}":{"perMinute":7,"perDay":70}},"keys":[{"key":"abc","plan":"${name}"}]}`);
    const config = parseConfig(raw, 'test.json', '/srv');
    const [entry] = [...config.keys.values()];
    assert.deepEqual(entry?.limits, { perMinute: 7, perDay: 70 });
    assert.deepEqual(config.plans.get(name), { perMinute: 7, perDay: 70 });
  });
}

test('the default plans are own entries only', () => {
  const config = parseConfig({}, 'test.json', '/srv');
  assert.deepEqual([...config.plans.keys()], ['free', 'pro', 'business']);
  assert.equal(config.plans.get('toString'), undefined);
});

test('a key with plan "toString" is refused at start, not a 500 on every request', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, { keys: [{ key: 'abc', plan: 'toString' }] });
  let srv;
  try {
    srv = await startBundle(['--memory', '--config', file], { cwd: dir });
  } catch (err) {
    assert.match(String(err), /exited with 1/);
    assert.match(String(err), /plan "toString" is not a known plan/);
    return;
  }
  try {
    const res = await call(`${srv.url}/pets`, { key: 'abc' });
    assert.fail(`the service started and answered ${res.status}`);
  } finally {
    await srv.stop();
  }
});

test('plans are merged with the defaults by name: a config that adds a plan keeps its free keys working', () => {
  const config = parseConfig({ plans: { tiny: { perMinute: 5, perDay: 50 } }, keys: [{ key: 'abc', plan: 'free' }, { key: 'def', plan: 'tiny' }] }, 'test.json', '/srv');
  assert.deepEqual([...config.plans.keys()], ['free', 'pro', 'business', 'tiny']);
  assert.deepEqual([...config.keys.values()].map((k) => [k.plan, k.limits.perMinute]), [['free', 60], ['tiny', 5]]);
});

test('a plan of a default name replaces that default only', () => {
  const config = parseConfig({ plans: { free: { perMinute: 30, perDay: 300 } } }, 'test.json', '/srv');
  assert.deepEqual(Object.fromEntries(config.plans), {
    free: { perMinute: 30, perDay: 300 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 },
  });
});

test('an invalid plans.free is reported as invalid, not as an unknown plan for the keys naming it', () => {
  const found = problems({ plans: { free: { perMinute: 0, perDay: 10 } }, keys: [{ key: 'abc', plan: 'free' }] });
  assert.ok(found.some((p) => p.startsWith('plans.free')), JSON.stringify(found));
  assert.ok(!found.some((p) => p.includes('not a known plan')), JSON.stringify(found));
});
