// Prefer (RFC 7240) as faults per request: what is honoured, what is passed over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrefer } from '../../src/admin/prefer.js';

const HONOURED: Array<[string, { code?: number; delayMs?: number; fault?: string; applied: string }]> = [
  ['code=500', { code: 500, applied: 'code=500' }],
  ['code=400', { code: 400, applied: 'code=400' }],
  ['code=599', { code: 599, applied: 'code=599' }],
  ['CODE=503', { code: 503, applied: 'code=503' }],
  ['code="502"', { code: 502, applied: 'code=502' }],
  ['delay=0', { delayMs: 0, applied: 'delay=0' }],
  ['delay=30000', { delayMs: 30000, applied: 'delay=30000' }],
  ['fault=reset', { fault: 'reset', applied: 'fault=reset' }],
  ['fault=Truncated', { fault: 'truncated', applied: 'fault=truncated' }],
  ['delay=100, code=503', { delayMs: 100, code: 503, applied: 'delay=100, code=503' }],
  ['code=503;foo=bar, delay=5', { code: 503, delayMs: 5, applied: 'delay=5, code=503' }],
  ['respond-async, wait=10, code=429', { code: 429, applied: 'code=429' }],
  ['code=500, code=404', { code: 500, applied: 'code=500' }],
  ['fault=empty, code=500', { code: 500, applied: 'code=500' }],
  ['delay = 7', { delayMs: 7, applied: 'delay=7' }],
  ['return=minimal, "odd;,value", fault=empty', { fault: 'empty', applied: 'fault=empty' }],
];
for (const [value, want] of HONOURED) {
  test(`Prefer: ${value}`, () => {
    const got = parsePrefer(value);
    assert.ok(got !== undefined);
    assert.deepEqual({ code: got.code, delayMs: got.delayMs, fault: got.fault, applied: got.applied },
      { code: want.code, delayMs: want.delayMs, fault: want.fault, applied: want.applied });
  });
}

const IGNORED = [
  '', 'respond-async', 'return=representation', 'code', 'code=', 'code=200', 'code=399', 'code=600', 'code=5000', 'code=50x',
  'code=5e2', 'delay=-1', 'delay=30001', 'delay=1.5', 'delay=abc', 'fault=explode', 'fault=', 'wait=100',
  `x=${'y'.repeat(1100)}, code=500`, // past the part looked at
];
for (const value of IGNORED) {
  test(`Prefer passed over: ${JSON.stringify(value.slice(0, 40))}`, () => {
    assert.equal(parsePrefer(value), undefined);
  });
}
