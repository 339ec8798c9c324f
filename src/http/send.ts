// The one exit: every response of the service is written here.
import type { Reply } from '../api/index.js';
import { boundUnreadBody, lingerAfterAnswer } from './drain.js';
import { loggedAddress } from './client-address.js';
import type { Exchange, Instance } from './exchange.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends a handler's reply with the headers gathered so far (or ends the connection, as it asks). */
export function sendReply(app: Instance, x: Exchange, reply: Reply): void {
  if (reply.headers !== undefined) Object.assign(x.headers, reply.headers);
  if (reply.end !== undefined) endConnection(app, x, reply);
  else send(app, x, reply.status, reply.body, reply.contentType);
}

/** The one exit: every response of the service is written here, with writeHead and end once. */
export function send(app: Instance, x: Exchange, status: number, body: string | Buffer | undefined, contentType = JSON_TYPE): void {
  const headers = x.headers;
  headers['x-request-id'] = x.reqId;
  if (body !== undefined) {
    headers['content-type'] = contentType;
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
  done(app, x, status);
}

/** Counts and logs an answer, with one more clock reading for its duration. */
function done(app: Instance, x: Exchange, status: number): void {
  if (x.quiet) return;
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

/**
 * A reply that asks for a broken connection (test harnesses simulating a bad network):
 * 'reset' drops it with a TCP RST, 'empty' closes it without a byte of answer, 'truncated'
 * sends the status line, the headers (Content-Length of the whole body) and half the body,
 * then closes. Counted and logged with the reply's status, as answered.
 */
function endConnection(app: Instance, x: Exchange, reply: Reply): void {
  const socket = x.req.socket;
  if (reply.end === 'reset') {
    socket.resetAndDestroy();
  } else if (reply.end === 'empty') {
    socket.destroy();
  } else {
    const body = typeof reply.body === 'string' ? Buffer.from(reply.body) : (reply.body ?? Buffer.alloc(0));
    const headers = x.headers;
    headers['x-request-id'] = x.reqId;
    headers['content-type'] = reply.contentType ?? JSON_TYPE;
    headers['content-length'] = String(body.length);
    headers['cache-control'] = 'no-store';
    x.res.writeHead(reply.status, headers);
    // The headers and half the body go out; then the connection closes with the rest unsent.
    x.res.write(body.subarray(0, body.length >> 1), () => socket.end());
  }
  done(app, x, reply.status);
}
