// The one exit: every response of the service is written here.
import { boundUnreadBody, lingerAfterAnswer } from './drain.js';
import { loggedAddress } from './client-address.js';
import type { Exchange, Instance } from './exchange.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** The one exit: every response of the service is written here, with writeHead and end once. */
export function send(app: Instance, x: Exchange, status: number, body: string | Buffer | undefined): void {
  const headers = x.headers;
  headers['x-request-id'] = x.reqId;
  if (body !== undefined) {
    headers['content-type'] = JSON_TYPE;
    headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  }
  headers['cache-control'] = 'no-store';
  const rh = x.req.headers;
  if (rh['content-length'] !== undefined || rh['transfer-encoding'] !== undefined) {
    boundUnreadBody(x);
    if (headers.connection === 'close' && !x.req.complete) lingerAfterAnswer(x.req.socket);
  }
  x.res.writeHead(status, headers);
  x.res.end(body);
  const metrics = app.metrics;
  if (metrics === undefined && !app.accessLog) return;
  // One clock reading for both: the figures and the log line give the same time.
  const elapsed = app.deps.clock.monotonic() - x.started;
  if (metrics !== undefined) metrics.request(x.operation, status, elapsed);
  if (!app.accessLog) return;
  logRequest(app, x, status, elapsed);
}

/**
 * The access log line, in pino-http's field names: req.remoteAddress, req.remotePort,
 * req.headers["user-agent"] (the one header logged: the others may carry a key), and for an
 * Error body err.type, err.code and err.message (pino's error serializer), so a 4xx says why.
 */
function logRequest(app: Instance, x: Exchange, status: number, elapsed: number): void {
  const req = x.req;
  const error = x.error;
  const userAgent = req.headers['user-agent'];
  app.deps.logger.log('info', 'request completed', {
    reqId: x.reqId,
    req: {
      method: req.method,
      url: req.url,
      remoteAddress: loggedAddress(req, app.deps.config()),
      remotePort: req.socket.remotePort,
      headers: userAgent === undefined ? undefined : { 'user-agent': userAgent },
    },
    res: { statusCode: status },
    err: error === undefined ? undefined : { type: 'ApiError', code: error.code, message: error.message },
    responseTime: Math.round(elapsed * 100) / 100,
    key: x.keyName,
  });
}
