// Broken answers, for test harnesses simulating a bad network: a handler's Reply may ask for
// one (`end`), and a connection fault (/__admin/faults or `Prefer: fault=`, injected-faults.ts)
// turns the answer of the request it caught into one. The latter is a step of the answer only
// on the routes that can be caught (outbound.ts): with faults off, no route runs it.
import type { ConnectionFault } from '../admin/index.js';
import type { Exchange, FaultStep } from './exchange.js';
import { headList } from './heads.js';

/**
 * The answer broken as asked: 'reset' drops the connection with a TCP RST, 'empty' closes it
 * without a byte of answer, 'truncated' sends the status line, the headers (Content-Length of
 * the whole body) and half the body, then closes. Counted and logged with the reply's status,
 * as answered (send.ts).
 */
export function writeBroken(x: Exchange, end: ConnectionFault, status: number, reply: string | Buffer | undefined, type: string): void {
  const socket = x.req.socket;
  if (end === 'reset') {
    socket.resetAndDestroy();
  } else if (end === 'empty') {
    socket.destroy();
  } else {
    const body = typeof reply === 'string' ? Buffer.from(reply) : (reply ?? Buffer.alloc(0));
    const headers = headList(x, type, body.length);
    // (The list is reused by the next answer: the journal keeps a copy.)
    if (x.journal) x.answer = { headers: headers.slice(), body, type };
    x.res.writeHead(status, headers);
    // The head goes out on its own (a HEAD answer has no body for write() to carry it), then
    // half the body; then the connection closes with the rest unsent.
    x.res.flushHeaders();
    x.res.write(body.subarray(0, body.length >> 1), () => socket.end());
  }
}

/** The step of a route a connection fault can catch: its answer, whatever it is, is broken. */
export const caughtAnswer: FaultStep = (x, status, body, type) => {
  const end = x.end;
  if (end === undefined) return false;
  writeBroken(x, end, status, body, type);
  return true;
};
