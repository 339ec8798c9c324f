import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, errorBody } from '../src/errors.js';

test('every error code is snake_case and documented in the README', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const [code, { status }] of Object.entries(ERROR_CODES)) {
    assert.match(code, /^[a-z]+(_[a-z]+)*$/);
    assert.ok(readme.includes(`\`${code}\``), `README documents ${code}`);
    assert.ok(status >= 400 && status < 600);
  }
});

test('the Error body repeats the status', () => {
  assert.deepEqual(JSON.parse(errorBody('not_found', 'x')), { code: 'not_found', message: 'x', status: 404 });
});
