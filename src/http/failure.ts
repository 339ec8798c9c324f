// Every failure becomes an Error body here: ApiErrors as they are, store errors as 503 or
// 400, anything else as a logged 500; a 413 waits for the rest of its upload (drain.ts).
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../core/index.js';
import { CreateOutcomeUnknownError, IdsExhaustedError, StoreBusyError, StoreInputError, StoreUnavailableError, StoreUnreachableError } from '../store/index.js';
import { BodyTooLarge, sendContinue } from './body.js';
import { DRAIN_CAP_BYTES, discardThen } from './drain.js';
import type { Exchange, Instance } from './exchange.js';
import { send } from './send.js';

const UNREACHABLE = new ApiError('service_unavailable', 'The database cannot be reached right now; retry later.');
const OUTCOME_UNKNOWN = new ApiError('service_unavailable', 'The database connection was lost after this create was sent, and whether the pet was stored cannot be known now. Retry with the same Idempotency-Key to get the outcome without creating it twice.');
// RFC 4918 section 11.5: a 507 is not to be repeated by automation. No Retry-After: no wait helps.
const IDS_EXHAUSTED = new ApiError('ids_exhausted', `No pet id is left: ids stay within the safe integer range (up to ${Number.MAX_SAFE_INTEGER}) and the largest is taken; nothing was added. Retrying cannot help.`);

/** Turns any failure into an Error body; only unexpected ones are 500s, and logged. */
export function fail(app: Instance, x: Exchange, err: unknown): void {
  const deps = app.deps;
  if (x.res.headersSent) {
    deps.logger.log('error', 'failure after the response started', { reqId: x.reqId, err: String(err) });
    x.res.destroy();
    return;
  }
  let error: ApiError;
  if (err instanceof ApiError) {
    error = err;
  } else if (err instanceof StoreUnavailableError) {
    x.headers['retry-after'] = '5';
    if (err instanceof StoreUnreachableError) {
      // The database is away; the store logs the outage once, not once per request.
      error = err instanceof CreateOutcomeUnknownError ? OUTCOME_UNKNOWN : UNREACHABLE;
    } else {
      error = new ApiError('service_unavailable', 'The store cannot write right now; nothing was added. Retry later.');
      if (err instanceof StoreBusyError) logBusy(app);
      else deps.logger.log('error', 'store unavailable', { reqId: x.reqId, err: err.message });
    }
  } else if (err instanceof IdsExhaustedError) {
    error = IDS_EXHAUSTED;
  } else if (err instanceof StoreInputError) {
    // The store refused input it cannot honour (seed ids): the client's request, not a fault.
    error = new ApiError('invalid_request', err.message);
  } else {
    error = new ApiError('internal_error', `Internal error; the request changed nothing (request id ${x.reqId}).`);
    deps.logger.log('error', 'unexpected failure', { reqId: x.reqId, err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  if (error.headers) Object.assign(x.headers, error.headers);
  x.error = error;
  if (x.req.headers.expect !== undefined && !x.req.readableDidRead) {
    // Decided once the bytes already received are parsed: see answerAwaitingContinue.
    if (awaitsContinue(x.req)) {
      setImmediate(answerAwaitingContinue, app, x, error);
      return;
    }
    sendContinue(x.req, x.res);
  }
  const body = error.body;
  // A 413 while the upload is still arriving waits for the rest of it (discarded, bounded),
  // unless the announced length is beyond what would be drained anyway.
  const announced = Number(x.req.headers['content-length'] ?? 0);
  if (error instanceof BodyTooLarge && !x.req.complete && !(announced > DRAIN_CAP_BYTES)) {
    discardThen(x, () => sendOrAbandon(app, x, error.status, body));
  } else {
    if (error instanceof BodyTooLarge && !x.req.complete) x.headers.connection = 'close';
    sendOrAbandon(app, x, error.status, body);
  }
}

/**
 * fail()'s way out, which must not throw: a response node refuses to write (writeHead throws
 * on a header value outside Latin-1, say) would otherwise escape the request, and the
 * process. Such a request gets no answer: its connection is closed, and the failure logged.
 */
export function sendOrAbandon(app: Instance, x: Exchange, status: number, body: string): void {
  try {
    send(app, x, status, body);
  } catch (err) {
    app.deps.logger.log('error', 'the response could not be written; connection closed', {
      reqId: x.reqId, status, err: err instanceof Error ? err.message : String(err),
    });
    x.res.destroy();
  }
}

/**
 * A full write queue refuses creates by the thousand under overload: one log line a second
 * says how many, instead of one line each.
 */
export function logBusy(app: Instance): void {
  const busy = app.busy;
  busy.refused++;
  const now = app.deps.clock.monotonic();
  if (now - busy.loggedAt < 1000) return;
  app.deps.logger.log('warn', 'store write queue full; creates answered 503', { refused: busy.refused });
  busy.refused = 0;
  busy.loggedAt = now;
}

/** A request that asked for 100 Continue, and neither was sent one nor has sent any body. */
export function awaitsContinue(req: IncomingMessage): boolean {
  return req.headers.expect !== undefined && !req.complete && !req.readableDidRead && req.readableLength === 0;
}

/**
 * RFC 9110 section 10.1.1. A client that waits for a 100 Continue before sending its body
 * gets this final answer instead, at once (not after waiting for a body that will not come),
 * and node:http closes the connection after it, since the client may or may not send that
 * body later. A client that sent its body without waiting (parsed by now, with any request
 * pipelined behind it) is sent the 100 after all, which keeps its connection and the
 * requests behind it answered, and is then answered like any other request.
 */
export function answerAwaitingContinue(app: Instance, x: Exchange, error: ApiError): void {
  if (awaitsContinue(x.req)) send(app, x, error.status, error.body);
  else fail(app, x, error);
}
