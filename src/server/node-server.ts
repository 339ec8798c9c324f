// The node:http server around the app: its options and bounds, the events the app answers
// itself (Expect, CONNECT, unparseable requests, a half-close), and the response class that
// closes every connection once the service is stopping.
import { ServerResponse, createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { answerAfterHalfClose, answerClientError, refuseConnect } from '../http/index.js';

/**
 * The server for `listener`. `stopping()` is asked at every answer's head; past
 * `maxConnections` node closes new connections at once.
 */
export function nodeServer(listener: RequestListener, maxConnections: number, stopping: () => boolean): Server {
  const server = createServer({
    // Once stopping, every answer closes its connection (requests already in flight too), so
    // that keep-alive clients move on instead of holding the server open until the grace
    // period runs out.
    ServerResponse: closingWhenStopping(stopping),
    // Deliberate bounds (see docs/api.md, "Timeouts and limits").
    headersTimeout: 10_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 5_000,
    maxHeaderSize: 16 * 1024,
    // The two timeouts above are enforced by a sweep; at node's default (30 s) a slowloris
    // socket would live up to 40 s instead of 10.
    connectionsCheckingInterval: 1_000,
    // Requests without Host, and unknown Expect values, are answered by the app with an
    // Error body rather than by node:http with an empty one.
    requireHostHeader: false,
  }, listener);
  server.on('checkExpectation', listener);
  // Expect: 100-continue: node:http would send the 100 before the app has looked at the
  // request; readJsonBody sends it once a body is wanted, so a 401 or 413 comes instead.
  server.on('checkContinue', listener);
  // Past it node closes new connections at once: file descriptors stay for the data files.
  server.maxConnections = maxConnections;
  // node's default (2000) drops every header after the 2000th from req.headers while its
  // parser still frames the request by them: a Transfer-Encoding, Expect or second Host
  // behind 2000 fillers would go unchecked. The 16 KiB header size bounds the count.
  server.maxHeadersCount = 0;
  // A client may half-close (FIN) once it has sent its requests and still read the answers:
  // each is answered, in order, and the connection closed after the last. By default node
  // stops writing at the FIN, and a create already being stored would never be answered.
  answerAfterHalfClose(server);
  server.on('connect', refuseConnect);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket));
  return server;
}

/**
 * The server's ServerResponse: once `stopping()`, every answer says Connection: close, also
 * the answer of a request that arrived before the stop (a create waiting for its write, a
 * delay fault), so node closes its connection after it. Every answer's head is written
 * through writeHead, node's implicit head included.
 */
function closingWhenStopping(stopping: () => boolean): typeof ServerResponse {
  class ClosingWhenStopping extends ServerResponse {}
  const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, status: number, reason?: unknown, headers?: unknown) => ServerResponse;
  // (Three plain parameters, as node's own writeHead has, not a rest array passed on with
  // apply: this runs for every answer. node reads writeHead(status, headers) and
  // writeHead(status, reason, headers) the same way with the third left undefined.)
  ClosingWhenStopping.prototype.writeHead = function writeHeadClosing(this: ServerResponse, status: number, reason?: unknown, headers?: unknown): ServerResponse {
    if (stopping()) this.setHeader('connection', 'close');
    return writeHead.call(this, status, reason, headers);
  } as ServerResponse['writeHead'];
  return ClosingWhenStopping as typeof ServerResponse;
}
