// The head of an answer: a plain answer reuses its route's last head and writes only what
// changed (HeadTemplate); every head must equal what the route's steps write afresh, whatever
// the order of the answers (other limits, other base URLs, other handler fields, gathered
// fields, refusals, bodies of other lengths).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseConfig } from '../../src/config/index.js';
import { Exchange, type HeadStep, type Outbound } from '../../src/http/exchange.js';
import { HeadTemplate, contentFields, deprecationFields, gatheredFields, headList, limitFields, requestIdField } from '../../src/http/heads.js';
import type { LimitResult } from '../../src/limits/index.js';
import { testConfig } from '../support/bundle.js';

const STEPS: HeadStep[] = [deprecationFields, limitFields, gatheredFields, requestIdField, contentFields];
const config = parseConfig(testConfig(), 'test', process.cwd());

function outbound(): Outbound {
  return { head: STEPS, fault: undefined, after: [], timed: false, template: new HeadTemplate() };
}

/** What the steps write for `x`, into a list of its own. */
function fresh(x: Exchange, type: string, length: number | undefined): string[] {
  const out: string[] = [];
  let n = 0;
  for (const step of STEPS) n = step(x, out, n, type, length);
  out.length = n;
  return out;
}

const limit = (remaining: number, policy = 'P1', limitText = '60', outcome: LimitResult['outcome'] = 'ok'): LimitResult => ({
  outcome, retryAfter: outcome === 'ok' ? 0 : 3, limit: limitText, remaining: String(remaining), reset: String(1_800_000_000 + remaining),
  policy, rateLimit: `"minute";r=${remaining};t=1`,
});
const DEPRECATED_A = ['Deprecation', '@1', 'Sunset', 'S', 'Link', '<http://a/v1/pets>; rel="successor-version"'];
const DEPRECATED_B = ['Deprecation', '@1', 'Sunset', 'S', 'Link', '<http://b/v1/pets>; rel="successor-version"'];
const LINK = { link: '<http://a/v1/pets?cursor=1>; rel="next"' };

interface Case {
  readonly limit?: LimitResult;
  readonly deprecated?: readonly string[];
  readonly replied?: Readonly<Record<string, string>>;
  readonly gathered?: Record<string, string>;
  readonly type?: string;
  readonly length?: number;
}

// Every change a plain answer can see from one to the next, and the answers that are not plain.
const shared = limit(41);
const CASES: Case[] = [
  { limit: limit(50), deprecated: DEPRECATED_A, length: 61 },
  { limit: limit(49), deprecated: DEPRECATED_A, length: 61 },
  { limit: limit(48), deprecated: DEPRECATED_A, length: 62 },
  { limit: shared, deprecated: DEPRECATED_A, length: 62 },
  { limit: shared, deprecated: DEPRECATED_A, length: 62 },
  { limit: limit(40), deprecated: DEPRECATED_B, length: 62 },
  { limit: limit(39, 'P2', '1000'), deprecated: DEPRECATED_B, length: 62 },
  { limit: limit(38, 'P2', '100000'), deprecated: DEPRECATED_B, length: 62 },
  { limit: limit(0, 'P2', '100000', 'rate_limited'), deprecated: DEPRECATED_B, length: 80 },
  { limit: limit(37, 'P2', '100000'), deprecated: DEPRECATED_B, length: 62 },
  { limit: limit(36, 'P2', '100000'), deprecated: DEPRECATED_B, gathered: { 'access-control-allow-origin': 'https://x' }, length: 62 },
  { limit: limit(35, 'P2', '100000'), deprecated: DEPRECATED_B, length: 62, type: 'text/plain' },
  { limit: limit(34, 'P2', '100000'), deprecated: DEPRECATED_B, length: 62 },
  { limit: limit(33, 'P2', '100000'), length: 62, replied: LINK },
  { limit: limit(32, 'P2', '100000'), length: 63, replied: LINK },
  { limit: limit(31, 'P2', '100000'), length: 63, replied: { link: '<http://a/v1/pets?cursor=2>; rel="next"' } },
  { limit: limit(30, 'P2', '100000'), length: 63 },
  { length: 44 },
  { length: 45 },
  { limit: limit(29, 'P2', '100000'), length: 63 },
  { limit: limit(28, 'P2', '100000') },
  { limit: limit(27, 'P2', '100000'), length: 63 },
];

test('every head equals what the steps write afresh, answer after answer on one route', () => {
  const route = outbound();
  let id = 0;
  for (const [i, c] of CASES.entries()) {
    const x = new Exchange({} as IncomingMessage, {} as ServerResponse, 0, `req-${++id}`, config, route);
    x.limit = c.limit;
    x.deprecated = c.deprecated;
    x.replied = c.replied;
    Object.assign(x.headers, c.gathered ?? {});
    const type = c.type ?? 'application/json; charset=utf-8';
    const expected = fresh(x, type, c.length);
    assert.deepEqual([...headList(x, type, c.length)], expected, `answer ${i}: ${JSON.stringify(c)}`);
  }
});

test('the patched head is the route\'s own: another route\'s answers do not change it', () => {
  const a = outbound();
  const b = outbound();
  const make = (route: Outbound, remaining: number, deprecated?: readonly string[]) => {
    const x = new Exchange({} as IncomingMessage, {} as ServerResponse, 0, `id-${remaining}`, config, route);
    x.limit = limit(remaining);
    x.deprecated = deprecated;
    return x;
  };
  for (let r = 100; r > 90; r--) {
    const xa = make(a, r, DEPRECATED_A);
    assert.deepEqual([...headList(xa, 'application/json', 10)], fresh(xa, 'application/json', 10));
    const xb = make(b, r + 1000);
    assert.deepEqual([...headList(xb, 'application/json', 20)], fresh(xb, 'application/json', 20));
  }
});
