// Two phases of the lifecycle (lifecycle.ts), after the limiter: faults a test asks for.
//
//   prefer   with admin.preferFaults: the request's own `Prefer: code=|delay=|fault=`
//            (RFC 7240), nothing armed; the answer says what was applied (Preference-Applied)
//   faults   with an admin key: the faults armed through /__admin/faults that match the
//            request (operation, key, header)
//
// Each waits first (a delay), then answers a status, lets the request be handled and breaks
// its answer (a create, or a truncated answer: the route's connection-fault step after the
// handler, broken.ts), or breaks the connection now.
import { faultAnswer, parsePrefer, type ConnectionFault, type FaultHit } from '../admin/index.js';
import type { Exchange, Instance } from './exchange.js';
import { record } from './outbound.js';
import { sendReply } from './send.js';

/** What a phase returns (lifecycle.ts): go on, DONE (answered), or a promise of either. */
type Step = undefined | typeof DONE | Promise<unknown>;
const DONE = 1;
const CREATE_OPERATION = 'createPet';

/** `Prefer` on a request, when admin.preferFaults is on; an unknown or bad preference is ignored. */
export function prefer(app: Instance, x: Exchange): Step {
  const value = x.req.headers.prefer;
  if (value === undefined) return undefined;
  // node joins repeated Prefer fields with ", ", as RFC 9110 section 5.3 allows for a list.
  const wanted = parsePrefer(typeof value === 'string' ? value : value.join(', '));
  if (wanted === undefined) return undefined;
  x.headers['preference-applied'] = wanted.applied;
  const { code, fault } = wanted;
  const then = (): Step => {
    if (code !== undefined) {
      sendReply(app, x, faultAnswer({ status: code, retryAfter: undefined }, `asked for with Prefer: code=${code}`));
      return DONE;
    }
    return fault === undefined ? undefined : broken(app, x, fault);
  };
  const delay = wanted.delayMs ?? 0;
  return delay > 0 ? app.faults.wait(delay).then(then) : then();
}

/** A fault set through /__admin/faults: answered instead, waited out first, or a broken connection. */
export function faults(app: Instance, x: Exchange): Step {
  if (app.faults.armed === 0) return undefined;
  const fault = app.faults.take(x.operation as string, { keyName: x.keyName, headers: x.req.headers });
  if (fault === undefined) return undefined;
  // A count fault shared by several workers is first granted by the primary.
  if (fault instanceof Promise) return fault.then((granted) => (granted === undefined ? undefined : caught(app, x, granted)));
  return caught(app, x, fault);
}

function caught(app: Instance, x: Exchange, fault: FaultHit): Step {
  if (fault.delayMs > 0) return app.faults.wait(fault.delayMs).then(() => faultHit(app, x, fault));
  return faultHit(app, x, fault);
}

/** After the wait: a status fault is the answer; a connection fault breaks it (see broken). */
function faultHit(app: Instance, x: Exchange, fault: FaultHit): Step {
  if (fault.status !== undefined) {
    sendReply(app, x, faultAnswer({ status: fault.status, retryAfter: fault.retryAfter, body: fault.body, headers: fault.headers }));
    return DONE;
  }
  return fault.kind === undefined ? undefined : broken(app, x, fault.kind);
}

/**
 * A connection fault on a create (or a truncated answer, which needs one) lets the request be
 * handled and breaks its answer; a reset or an empty close of any other operation happens
 * now, before the handler.
 */
function broken(app: Instance, x: Exchange, kind: ConnectionFault): Step {
  if (kind === 'truncated' || x.operation === CREATE_OPERATION) {
    x.end = kind;
    return undefined;
  }
  breakConnection(app, x, kind);
  return DONE;
}

/**
 * A reset or an empty close before the request is handled (a connection fault on anything but
 * a create): nothing is answered, so nothing is counted or logged as an answer; the journal
 * records it with status 0.
 */
function breakConnection(app: Instance, x: Exchange, end: 'reset' | 'empty'): void {
  const socket = x.req.socket;
  if (end === 'reset') socket.resetAndDestroy();
  else socket.destroy();
  if (x.journal) record(app, x, 0, app.deps.clock.monotonic() - x.started);
}
