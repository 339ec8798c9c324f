// GET /metrics: the Prometheus text exposition of the app's recorder. Outside /v1, no key, no
// limit; answered beside send() (its own content type) and not counted itself, so that a
// scrape every few seconds does not show up in the request figures it reports.
import { ApiError } from '../core/index.js';
import { EXPOSITION_CONTENT_TYPE, mergeSnapshots, render, type MetricsSnapshot } from '../metrics/index.js';
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
  const peers = app.deps.peerMetrics;
  if (peers === undefined) {
    write(x, recorder.snapshot());
    return undefined;
  }
  // With workers, one scrape sees the whole service: the others' figures summed with these.
  const own = recorder.snapshot();
  return peers().then((others) => write(x, mergeSnapshots([own, ...others])));
}

function write(x: Exchange, snapshot: MetricsSnapshot): void {
  const body = render(snapshot);
  x.res.writeHead(200, {
    'content-type': EXPOSITION_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    'x-request-id': x.reqId,
  });
  x.res.end(body);
}
