// Config files that are not JSON: the line and column of the first error, never the text; a
// UTF-8 byte order mark is accepted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfigFile } from '../../src/config/index.js';
import { jsonSyntaxError } from '../../src/config/json-syntax.js';
import { tempDir } from '../support/bundle.js';

const invalid: Array<[string, string, number, number, RegExp]> = [
  ['cut short', '{ "keys": [', 1, 12, /expected a value, found the end of the file/],
  ['trailing comma', '{\n  "port": 8080,\n}', 3, 1, /member name.*found '\}'/],
  ['missing comma', '{\n  "host": "a"\n  "port": 1\n}', 3, 3, /expected ',' or '\}', found '"'/],
  ['CRLF lines', '{\r\n  "port": 80\r\n  "host": "a"}', 3, 3, /expected ','/],
  ['single quotes', "{'port': 8080}", 1, 2, /double quotes/],
  ['comment', '// the config\n{}', 1, 1, /expected a value, found '\/'/],
  ['bare word', '{"a": tru}', 1, 7, /expected a value, found a letter/],
  ['raw newline in a string', '{"a": "x\ny"}', 1, 9, /U\+000A inside a string/],
  ['bad escape', '{"a": "\\x"}', 1, 8, /escape/],
  ['unclosed string', '{"a": "abc', 1, 11, /not closed/],
  ['leading zero', '{"a": 01}', 1, 8, /expected ',' or '\}', found a digit/],
  ['after the value', '{} {}', 1, 4, /end of the file after the JSON value/],
  ['empty', '', 1, 1, /end of the file/],
  ['mismatched bracket', '[1, 2}', 1, 6, /expected ',' or '\]'/],
  ['a BOM in the middle', '{"a":\uFEFF1}', 1, 6, /byte order mark/],
];

for (const [name, text, line, column, reason] of invalid) {
  test(`syntax error: ${name}`, () => {
    assert.throws(() => JSON.parse(text), 'JSON.parse refuses it too');
    const e = jsonSyntaxError(text);
    assert.ok(e, 'found');
    assert.deepEqual([e.line, e.column], [line, column], e.reason);
    assert.match(e.reason, reason);
  });
}

test('JSON that JSON.parse accepts has no syntax error', () => {
  const valid = ['{}', '[]', ' {"a": [1, -2.5e+3, true, false, null, "x\\u00e9\\n", {"b": {}}]} ', '"s"', '0', '[[[]]]',
    JSON.stringify({ keys: [{ key: 'k', plan: 'free' }], environments: { production: 'https://x/v1' } }, null, 2)];
  for (const text of valid) {
    JSON.parse(text);
    assert.equal(jsonSyntaxError(text), undefined, text);
  }
});

test('a config file names the line and column, and never echoes a key', async () => {
  const dir = tempDir();
  const file = join(dir, 'petstore.config.json');
  writeFileSync(file, '{\n  "keys": [\n    { "key": "secret-key-123", "plan": free }\n  ]\n}\n');
  await assert.rejects(loadConfigFile(file), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /not valid JSON at line 3, column 40: expected a value, found a letter/);
    assert.ok(err.message.includes(file));
    assert.ok(!err.message.includes('secret'), err.message);
    return true;
  });
});

test('a UTF-8 byte order mark at the start of a config file is accepted', async () => {
  const dir = tempDir();
  const file = join(dir, 'petstore.config.json');
  writeFileSync(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"port": 1234, "keys": [{"key": "k", "plan": "free"}]}')]));
  const config = await loadConfigFile(file);
  assert.equal(config.port, 1234);
  assert.equal(config.keys.size, 1);
  // Duplicates are still found after it.
  writeFileSync(file, '\uFEFF{"port": 1, "port": 2}');
  await assert.rejects(loadConfigFile(file), /port is given more than once/);
  // ... and a broken file after it is located without counting the mark.
  writeFileSync(file, '\uFEFF{"port": }');
  await assert.rejects(loadConfigFile(file), /line 1, column 10/);
});
