import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ApiError, ERROR_CODES, errorBody, type ErrorCode } from '../../src/core/errors.js';

test('every error code is snake_case and documented in docs/api.md', () => {
  const readme = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  for (const [code, { status }] of Object.entries(ERROR_CODES)) {
    assert.match(code, /^[a-z]+(_[a-z]+)*$/);
    assert.ok(readme.includes(`\`${code}\``), `docs/api.md documents ${code}`);
    assert.ok(status >= 400 && status < 600);
  }
});

test('the Error body repeats the status', () => {
  assert.deepEqual(JSON.parse(errorBody('not_found', 'x')), { code: 'not_found', message: 'x', status: 404 });
});

test('the Error body is exactly the JSON of {code, message, status}, whatever the message holds', () => {
  const messages = ['plain', 'quote " backslash \\ slash /', 'control \u0000\u001f\n\t', 'unicode é ✓ 🐕', 'lone surrogate \ud800', '</script>'];
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
    for (const message of messages) {
      const expected = JSON.stringify({ code, message, status: ERROR_CODES[code].status });
      assert.equal(errorBody(code, message), expected);
      assert.deepEqual(JSON.parse(errorBody(code, message)), { code, message, status: ERROR_CODES[code].status });
    }
  }
});

test('an ApiError is an Error (instanceof, name, message) without a captured stack', () => {
  const err = new ApiError('invalid_request', 'limit is wrong', { 'retry-after': '1' });
  assert.ok(err instanceof Error);
  assert.ok(err instanceof ApiError);
  assert.equal(err.name, 'ApiError');
  assert.equal(err.message, 'limit is wrong');
  assert.equal(err.status, 400);
  assert.deepEqual(err.headers, { 'retry-after': '1' });
  assert.equal(err.body, errorBody('invalid_request', 'limit is wrong'));
  assert.equal(String(err), 'ApiError: limit is wrong');
  assert.equal(Object.prototype.toString.call(err), '[object Object]');
});
