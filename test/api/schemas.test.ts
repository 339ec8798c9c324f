import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/core/errors.js';
import { parseCursor, parseLimit, parseListQuery, parseNewPet, parsePetId, parseStatus, plainPetId } from '../../src/api/schemas.js';
import { parseQuery } from '../../src/http/query.js';
import { check } from '../../src/api/validate.js';
import * as schemas from '../../src/api/schemas.js';
import { newPetSchema } from '../../src/api/schemas.js';
import type { Schema } from '../../src/api/validate.js';

/** Parameter parsers return (not throw) their ApiError, a 400 naming the parameter. */
function rejects(fn: () => unknown, field: string): void {
  const result = fn();
  assert.ok(result instanceof ApiError, `expected an ApiError, got ${String(result)}`);
  assert.equal(result.code, 'invalid_request');
  assert.equal(result.status, 400);
  assert.match(result.message, new RegExp(field));
}

test('limit: accepted values', () => {
  assert.equal(parseLimit(undefined), 20);
  assert.equal(parseLimit('1'), 1);
  assert.equal(parseLimit('100'), 100);
  assert.equal(parseLimit('050'), 50);
  assert.equal(parseLimit('0020'), 20);
  assert.equal(parseLimit('0000100'), 100);
});
for (const raw of ['0', '101', 'abc', '1.5', '1e1', '', '-1', '+1', ' 1', '0x10', '1000', '0000', '00101', '01000']) {
  test(`limit ${JSON.stringify(raw)} refused`, () => rejects(() => parseLimit(raw), 'limit'));
}

test('status', () => {
  for (const s of ['available', 'pending', 'sold'] as const) assert.equal(parseStatus(s), s);
  assert.equal(parseStatus(undefined), undefined);
  for (const s of ['', 'Available', 'lost', 'sold ']) rejects(() => parseStatus(s), 'status');
});

test('cursor', () => {
  assert.equal(parseCursor('15'), 15);
  for (const s of ['', 'x', '-1', '1.5', '99999999999999999']) rejects(() => parseCursor(s), 'cursor');
});

test('the GET /pets query: defaults, values, and the first problem found', () => {
  assert.deepEqual(parseListQuery(parseQuery('')), { limit: 20, status: undefined, afterId: undefined });
  assert.deepEqual(parseListQuery(parseQuery('limit=5&status=sold&cursor=9&other=x')), { limit: 5, status: 'sold', afterId: 9 });
  const cases: Array<[string, string]> = [
    ['limit=0', 'limit'], ['limit=1&limit=2', 'limit'], ['status=lost', 'status'], ['status=sold&status=sold', 'status'],
    ['cursor=x', 'cursor'], ['cursor=1&cursor=2', 'cursor'], ['limit=0&status=lost', 'limit'], ['status=lost&cursor=x', 'status'],
  ];
  for (const [query, field] of cases) rejects(() => parseListQuery(parseQuery(query)), field);
});

test('petId', () => {
  assert.equal(parsePetId('42'), 42);
  assert.equal(parsePetId('-3'), -3);
  assert.equal(parsePetId('9223372036854775807'), Number.POSITIVE_INFINITY);
  for (const s of ['abc', '1.5', '1e3', '', '9223372036854775808', '-9223372036854775809', '0x1', ' 1']) rejects(() => parsePetId(s), 'petId');
});

// The handler reads plain digits by hand (the pet cache's key) and leaves every other form to
// parsePetId: for each form, the hand reading is the same number or declines (-1).
const PET_ID_FORMS: Array<[string, number]> = [
  ['0', 0], ['7', 7], ['42', 42], ['007', 7], ['000000000000000', 0], ['999999999999999', 999_999_999_999_999],
  ['1000000000000000', -1], ['9223372036854775807', -1], ['-3', -1], ['+3', -1], ['', -1], [' 1', -1], ['1 ', -1],
  ['1.5', -1], ['1e3', -1], ['0x1', -1], ['/', -1], [':', -1], ['１', -1], ['4\u0000', -1],
];
for (const [raw, want] of PET_ID_FORMS) {
  test(`petId ${JSON.stringify(raw)} read by hand: ${want}`, () => {
    assert.equal(plainPetId(raw), want);
    if (want !== -1) assert.equal(parsePetId(raw), want, 'the same number as parsePetId');
  });
}

const validPets: unknown[] = [
  { name: 'a', categoryId: 0 },
  { name: 'a', categoryId: -5, status: 'sold' },
  { name: 'x'.repeat(256), categoryId: Number.MAX_SAFE_INTEGER },
  { name: 'a', categoryId: 1, id: 77, extra: true },
];
for (const body of validPets) {
  test(`NewPet accepted: ${JSON.stringify(body).slice(0, 50)}`, () => {
    const pet = parseNewPet(body);
    assert.deepEqual(Object.keys(pet).filter((k) => !['name', 'categoryId', 'status'].includes(k)), []);
  });
}

const invalidPets: Array<[unknown, string]> = [
  [null, 'object'], [[], 'object'], ['x', 'object'], [5, 'object'],
  [{ categoryId: 1 }, 'name'], [{ name: '', categoryId: 1 }, 'name'], [{ name: ' ', categoryId: 1 }, 'name'],
  [{ name: 'x'.repeat(257), categoryId: 1 }, 'name'], [{ name: 1, categoryId: 1 }, 'name'], [{ name: ['a'], categoryId: 1 }, 'name'],
  [{ name: 'a' }, 'categoryId'], [{ name: 'a', categoryId: '1' }, 'categoryId'], [{ name: 'a', categoryId: 1.5 }, 'categoryId'],
  [{ name: 'a', categoryId: Number.MAX_SAFE_INTEGER + 2 }, 'categoryId'], [{ name: 'a', categoryId: Infinity }, 'categoryId'],
  [{ name: 'a', categoryId: NaN }, 'categoryId'], [{ name: 'a', categoryId: null }, 'categoryId'],
  [{ name: 'a', categoryId: 1, status: 'lost' }, 'status'], [{ name: 'a', categoryId: 1, status: null }, 'status'],
  [{ name: 'a', categoryId: 1, status: 1 }, 'status'],
];
for (const [body, field] of invalidPets) {
  test(`NewPet refused (${field}): ${JSON.stringify(body)?.slice(0, 50)}`, () => {
    // The body parser throws (its caller is async); the parameter parsers return.
    assert.throws(() => parseNewPet(body), (e: unknown) => e instanceof ApiError && e.code === 'invalid_request' && e.message.includes(field));
  });
}

// The name rule: no C0 control character or DEL, no lone surrogate (both can arrive as JSON
// escapes); everything else in Unicode is a name, astral characters and C1 controls included.
const nameCases: Array<{ name: string; value: string; problem?: RegExp }> = [
  { name: 'plain', value: 'Rex' },
  { name: 'accents and CJK', value: 'Éclair 小狗' },
  { name: 'emoji (a surrogate pair)', value: 'dog \ud83d\udc15' },
  { name: 'a pair at the very end', value: 'x\ud83d\ude00' },
  { name: 'U+0080 (C1, allowed)', value: 'a\u0080b' },
  { name: 'U+00A0 no-break space inside', value: 'a\u00a0b' },
  { name: 'NUL', value: 'a\u0000b', problem: /control characters/ },
  { name: 'tab inside', value: 'a\tb', problem: /control characters/ },
  { name: 'newline inside', value: 'Rex\nAdmin: yes', problem: /control characters/ },
  { name: 'carriage return', value: 'a\rb', problem: /control characters/ },
  { name: 'escape (ANSI)', value: '\u001b[31mred', problem: /control characters/ },
  { name: 'U+001F', value: 'a\u001fb', problem: /control characters/ },
  { name: 'DEL', value: 'a\u007fb', problem: /control characters/ },
  { name: 'lone high surrogate', value: 'a\ud800b', problem: /lone surrogate/ },
  { name: 'lone low surrogate', value: '\udc00', problem: /lone surrogate/ },
  { name: 'high surrogate at the end', value: 'abc\ud83d', problem: /lone surrogate/ },
  { name: 'pair in the wrong order', value: '\ude00\ud83d', problem: /lone surrogate/ },
];
for (const tc of nameCases) {
  test(`name ${tc.problem ? 'refused' : 'accepted'}: ${tc.name}`, () => {
    const body = { name: tc.value, categoryId: 1 };
    if (tc.problem === undefined) {
      assert.equal(parseNewPet(body).name, tc.value);
      return;
    }
    const problem = tc.problem;
    assert.throws(() => parseNewPet(body), (e: unknown) => e instanceof ApiError && e.status === 400 &&
      e.code === 'invalid_request' && e.message.includes('name') && problem.test(e.message));
  });
}

test('__proto__ in a body never reaches a prototype', () => {
  const body: unknown = JSON.parse('{"name":"a","categoryId":1,"__proto__":{"status":"sold"}}');
  const pet = parseNewPet(body);
  assert.equal(pet.status, undefined);
  assert.equal(Object.getPrototypeOf(pet), Object.prototype);
});

test('check reports every problem with its path', () => {
  const problems = check(newPetSchema, { status: 'x' });
  assert.deepEqual(problems.map((p) => p.path).sort(), ['categoryId', 'name', 'status']);
});

test('a blank name and a fractional categoryId: both named', () => {
  assert.throws(() => parseNewPet({ name: '   ', categoryId: 1.5 }), (err: ApiError) => {
    assert.equal(err.message, 'Invalid pet: categoryId must be an integer, got a number; name must not be blank.');
    return true;
  });
});

test('every example in the schemas conforms to its own schema', () => {
  let count = 0;
  const visit = (schema: Schema, where: string): void => {
    for (const example of schema.examples ?? []) {
      assert.deepEqual(check(schema, example), [], `${where}: example ${JSON.stringify(example)}`);
      count++;
    }
    if (schema.type === 'object') for (const [name, sub] of Object.entries(schema.properties)) visit(sub, `${where}.${name}`);
    if (schema.type === 'array') visit(schema.items, `${where}[]`);
  };
  for (const [name, value] of Object.entries(schemas)) {
    if (typeof value === 'object' && value !== null && 'type' in value) visit(value as Schema, name);
  }
  assert.ok(count >= 10, `${count} examples checked`);
});
