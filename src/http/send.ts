// The one exit: every response of the service is written here, with the steps its route was
// given after the handler (outbound.ts): the head's fields, a connection fault's broken
// answer, then what runs once it is written.
import type { Reply } from '../api/index.js';
import { writeBroken } from './broken.js';
import { boundUnreadBody, lingerAfterAnswer } from './drain.js';
import type { AfterPhase, Exchange, Instance } from './exchange.js';
import { headList, isEmpty } from './heads.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends a handler's reply with the headers gathered so far (or ends the connection, as it asks). */
export function sendReply(app: Instance, x: Exchange, reply: Reply): void {
  const fields = reply.headers;
  if (fields !== undefined) {
    // Kept apart while nothing else was gathered (the usual answer): heads.ts writes both.
    if (x.replied === undefined && isEmpty(x.headers)) x.replied = fields;
    else Object.assign(x.headers, fields);
  }
  const type = reply.contentType ?? JSON_TYPE;
  if (reply.end !== undefined) {
    writeBroken(x, reply.end, reply.status, reply.body, type);
    done(app, x, reply.status);
  } else {
    send(app, x, reply.status, reply.body, type);
  }
}

/** The one exit: every response of the service is written here, with writeHead and end once. */
export function send(app: Instance, x: Exchange, status: number, body: string | Buffer | undefined, type = JSON_TYPE): void {
  // A connection fault caught this request (only on the routes that have the step).
  const fault = x.outbound.fault;
  if (fault !== undefined && fault(x, status, body, type)) {
    done(app, x, status);
    return;
  }
  const rh = x.req.headers;
  if (rh['content-length'] !== undefined || rh['transfer-encoding'] !== undefined) {
    boundUnreadBody(x);
    if (x.headers.connection === 'close' && !x.req.complete) lingerAfterAnswer(x.req.socket);
  }
  const length = body === undefined ? undefined : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const headers = headList(x, type, length);
  // (The list is reused by the next answer: the journal keeps a copy.)
  if (x.journal) x.answer = { headers: headers.slice(), body, type };
  x.res.writeHead(status, headers);
  x.res.end(body);
  done(app, x, status);
}

/** What the route runs once its answer is written, with one more clock reading for its duration. */
function done(app: Instance, x: Exchange, status: number): void {
  const out = x.outbound;
  if (!x.journal && !out.timed) return;
  // One clock reading for all: the journal, the figures and the log line give the same time.
  const elapsed = app.deps.clock.monotonic() - x.started;
  const steps = out.after;
  for (let i = 0; i < steps.length; i++) (steps[i] as AfterPhase)(app, x, status, elapsed);
}
