// The Idempotency-Key header rules, table-driven: a Structured Field string and the bare form
// name the same key; 1..255 printable ASCII characters inside; anything else is a 400 that
// names the header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIdempotencyKey } from '../../src/api/idempotency-key.js';
import { ApiError } from '../../src/core/index.js';
import type { PetStore } from '../../src/store/index.js';

const long = 'k'.repeat(255);

const accepted: ReadonlyArray<{ name: string; value: string; key: string }> = [
  { name: 'bare', value: 'abc', key: 'abc' },
  { name: 'quoted (Structured Field string)', value: '"abc"', key: 'abc' },
  { name: 'a UUID, bare', value: '8e03978e-40d5-43e8-bc93-6894a57f9324', key: '8e03978e-40d5-43e8-bc93-6894a57f9324' },
  { name: 'a UUID, quoted', value: '"8e03978e-40d5-43e8-bc93-6894a57f9324"', key: '8e03978e-40d5-43e8-bc93-6894a57f9324' },
  { name: 'one character', value: 'x', key: 'x' },
  { name: 'one character, quoted', value: '"x"', key: 'x' },
  { name: '255 characters, bare', value: long, key: long },
  { name: '255 characters, quoted (257 with the quotes)', value: `"${long}"`, key: long },
  { name: 'inner space, bare', value: 'a b', key: 'a b' },
  { name: 'inner space, quoted', value: '"a b"', key: 'a b' },
  { name: 'every printable punctuation, bare', value: '!#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', key: '!#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~' },
  { name: 'escaped quote inside a string', value: '"a\\"b"', key: 'a"b' },
  { name: 'escaped backslash inside a string', value: '"a\\\\b"', key: 'a\\b' },
  { name: 'a quote inside a bare key', value: 'a"b', key: 'a"b' },
  { name: 'a one-character key that is a quote, quoted', value: '"\\""', key: '"' },
];

const refused: ReadonlyArray<{ name: string; value: string }> = [
  { name: 'empty', value: '' },
  { name: 'empty string', value: '""' },
  { name: '256 characters, bare', value: `${long}k` },
  { name: '256 characters, quoted', value: `"${long}k"` },
  { name: 'no closing quote', value: '"abc' },
  { name: 'a lone quote', value: '"' },
  { name: 'text after the closing quote', value: '"abc"d' },
  { name: 'a list of two strings', value: '"a", "b"' },
  { name: 'parameters after the string', value: '"abc";a=1' },
  { name: 'an unknown escape', value: '"a\\nb"' },
  { name: 'a backslash at the end of a string', value: '"abc\\' },
  { name: 'an unescaped quote inside a string', value: '"a"b"' },
  { name: 'a tab, bare', value: 'a\tb' },
  { name: 'a tab, quoted', value: '"a\tb"' },
  { name: 'DEL', value: 'a\u007fb' },
  { name: 'Latin-1 (as node hands header bytes over)', value: 'caf\u00e9' },
  { name: 'a control character', value: 'a\u0001' },
];

test('Idempotency-Key values that name a key', async (t) => {
  for (const c of accepted) {
    await t.test(c.name, () => assert.equal(parseIdempotencyKey(c.value), c.key));
  }
});

test('Idempotency-Key values refused with a 400 that names the header', async (t) => {
  for (const c of refused) {
    await t.test(c.name, () => {
      const result = parseIdempotencyKey(c.value);
      assert.ok(result instanceof ApiError, `${JSON.stringify(c.value)} gave ${String(result)}`);
      assert.equal(result.code, 'invalid_request');
      assert.equal(result.status, 400);
      assert.match(result.message, /Idempotency-Key/);
    });
  }
});

test('the bare and the quoted form are the same key', () => {
  for (const c of accepted) {
    if (c.value.startsWith('"') || c.key.includes('"') || c.key.includes('\\')) continue;
    assert.equal(parseIdempotencyKey(`"${c.value}"`), parseIdempotencyKey(c.value), c.name);
  }
});

test('a store without createIdempotent answers a keyed create with 501 and stores nothing', async () => {
  const { createOnce } = await import('../../src/api/idempotency-key.js');
  const { openMemoryStore } = await import('../../src/store/index.js');
  const memory = openMemoryStore();
  // A backend that implements only the base contract (as a new one may, until it has keys).
  const bare: PetStore = {
    get: (id) => memory.get(id),
    list: (q) => memory.list(q),
    create: (pet) => memory.create(pet),
    seed: (pets) => memory.seed(pets),
    reset: () => memory.reset(),
    close: () => memory.close(),
  };
  const answer = await createOnce(bare, { name: 'Rex', categoryId: 1 }, 'k', 'a'.repeat(64), 'http://h/v1');
  assert.ok(answer instanceof ApiError);
  assert.equal(answer.code, 'not_implemented');
  assert.match(answer.message, /Idempotency-Key/);
  assert.equal(memory.count, 0);
  const keyed = await createOnce(memory, { name: 'Rex', categoryId: 1 }, 'k', 'a'.repeat(64), 'http://h/v1');
  assert.deepEqual(keyed, { status: 201, body: '{"id":1,"name":"Rex","categoryId":1}', headers: { location: 'http://h/v1/pets/1' } });
});

test('a replay carries Idempotent-Replayed: true; the first answer does not', async () => {
  const { createOnce } = await import('../../src/api/idempotency-key.js');
  const { openMemoryStore } = await import('../../src/store/index.js');
  const memory = openMemoryStore();
  const first = await createOnce(memory, { name: 'Rex', categoryId: 1 }, 'k', 'a'.repeat(64), 'http://h/v1');
  const again = await createOnce(memory, { name: 'Rex', categoryId: 1 }, 'k', 'a'.repeat(64), 'http://h/v1');
  assert.deepEqual(first, { status: 201, body: '{"id":1,"name":"Rex","categoryId":1}', headers: { location: 'http://h/v1/pets/1' } });
  assert.deepEqual(again, {
    status: 201, body: '{"id":1,"name":"Rex","categoryId":1}', headers: { location: 'http://h/v1/pets/1', 'idempotent-replayed': 'true' },
  });
});
