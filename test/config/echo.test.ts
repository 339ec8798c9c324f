// A refused value is echoed in its message (clipped), so the operator sees what was read; a key
// never is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { problems } from '../support/config-problems.js';

const cases: Array<[Record<string, unknown>, RegExp]> = [
  [{ port: '8080' }, /port must be an integer from 0 to 65535, got "8080"/],
  [{ port: 70000 }, /got 70000/],
  [{ port: 'x'.repeat(500) }, /got "x{40,60}…?/],
  [{ metrics: 'yes' }, /metrics must be true or false, got "yes"/],
  [{ plans: [] }, /plans must be an object .*, got \[\]/],
  [{ ban: 5 }, /ban must be an object .*, got 5/],
  [{ cors: 'all' }, /cors must be an object .*, got "all"/],
  [{ environments: 1 }, /environments must be an object .*, got 1/],
  [{ host: 5 }, /host must be a non-empty string, got 5/],
  [{ anonymous: 'lots' }, /anonymous must be an object .*, got "lots"/],
];
for (const [raw, message] of cases) {
  test(`${JSON.stringify(raw).slice(0, 40)}: the value is echoed`, () => {
    const found = problems(raw);
    assert.ok(found.some((p) => message.test(p)), JSON.stringify(found));
    assert.ok(found.every((p) => p.length < 300), 'clipped');
  });
}

test('a key is never echoed', () => {
  const found = problems({ keys: [{ key: 'has spaces secret', plan: 'free' }] });
  assert.ok(found.length > 0 && found.every((p) => !p.includes('secret')), JSON.stringify(found));
});
