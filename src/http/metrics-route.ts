// GET /metrics: the Prometheus text exposition of the app's recorder. Outside /v1, no key, no
// limit; answered beside send() (its own content type) and not counted itself, so that a
// scrape every few seconds does not show up in the request figures it reports.
import { ApiError } from '../core/index.js';
import { EXPOSITION_CONTENT_TYPE, render } from '../metrics/index.js';
import { boundUnreadBody } from './drain.js';
import type { Exchange, Instance } from './exchange.js';
import { fail } from './failure.js';

export function answerMetrics(app: Instance, x: Exchange, method: string): Promise<void> | undefined {
  if (method !== 'GET' && method !== 'HEAD') {
    x.headers.allow = 'GET, HEAD';
    fail(app, x, new ApiError('method_not_allowed', 'Method not allowed on /metrics; allowed: GET, HEAD.'));
    return undefined;
  }
  const recorder = app.metrics;
  if (recorder === undefined) return undefined; // not reached: app.ts routes here only with metrics on
  const rh = x.req.headers;
  if (rh['content-length'] !== undefined || rh['transfer-encoding'] !== undefined) boundUnreadBody(x);
  // The text comes made (and cached for a short time: metrics/scrape-cache.ts), so that a
  // flood of scrapes costs the API little; without a scrape function, this recorder's own.
  const scrape = app.deps.scrape;
  const text = scrape === undefined ? render(recorder.snapshot()) : scrape();
  if (typeof text === 'string') {
    write(x, text);
    return undefined;
  }
  return text.then((body) => write(x, body));
}

function write(x: Exchange, body: string): void {
  x.res.writeHead(200, {
    'content-type': EXPOSITION_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    'x-request-id': x.reqId,
  });
  x.res.end(body);
}
