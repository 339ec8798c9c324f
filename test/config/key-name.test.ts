// Key names are printed (keys list, logs, messages): printable characters only, refused at load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeKeyName, keyNameProblem } from '../../src/config/index.js';
import { problems } from '../support/config-problems.js';

const refused: Array<{ name: string; value: string; code: string }> = [
  { name: 'a newline (a fake row in keys list)', value: 'a\nb', code: 'U+000A' },
  { name: 'a carriage return', value: 'ok\rEVIL', code: 'U+000D' },
  { name: 'a C0 control', value: '\u0001', code: 'U+0001' },
  { name: 'a terminal escape', value: '\u001b[2J\u001b[31mEVIL', code: 'U+001B' },
  { name: 'DEL', value: 'x\u007f', code: 'U+007F' },
  { name: 'a C1 control (NEL)', value: 'x\u0085y', code: 'U+0085' },
  { name: 'a C1 CSI', value: '\u009b31m', code: 'U+009B' },
  { name: 'a right-to-left override', value: 'admin\u202eyek', code: 'U+202E' },
  { name: 'a left-to-right embedding', value: '\u202ax', code: 'U+202A' },
  { name: 'a first-strong isolate', value: 'x\u2068', code: 'U+2068' },
  { name: 'a pop directional isolate', value: 'x\u2069', code: 'U+2069' },
  { name: 'a right-to-left mark', value: 'x\u200f', code: 'U+200F' },
  { name: 'a line separator', value: 'a\u2028b', code: 'U+2028' },
  { name: 'a lone surrogate', value: 'a\ud800', code: 'U+D800' },
];

for (const c of refused) {
  test(`a key name with ${c.name} is refused at load, naming the character, never echoing the name`, () => {
    const found = problems({ keys: [{ key: 'k1', plan: 'free', name: c.value }] });
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(found[0] as string, new RegExp(`^keys\\[0\\]\\.name holds ${c.code.replace("+", "\\+")} at position \\d+: names must be printable characters`));
    assert.ok(!(found[0] as string).includes(c.value));
    assert.notEqual(keyNameProblem(c.value), undefined);
    assert.doesNotMatch(escapeKeyName(c.value), /[\u0000-\u001f\u007f-\u009f\u200f\u2028\u202a-\u202e\u2066-\u2069]|\p{Surrogate}/u);
  });
}

test('printable names are accepted as they are: spaces, punctuation, accents, other scripts, emoji', () => {
  for (const name of ['ci', 'team a / billing', 'café', 'Ωμέγα', 'مفتاح', '鍵', 'key 🔑', 'tab-free\\n (a backslash and an n)']) {
    assert.deepEqual(problems({ keys: [{ key: 'k1', plan: 'free', name }] }), [], name);
    assert.equal(escapeKeyName(name), name);
  }
  assert.match(problems({ keys: [{ key: 'k1', plan: 'free', name: '' }] })[0] ?? '', /keys\[0\]\.name must be a non-empty string/);
});

test('escapeKeyName writes each refused character as \\uNNNN', () => {
  assert.equal(escapeKeyName('a\nb\u001b[2J\u202e'), 'a\\u000ab\\u001b[2J\\u202e');
});
