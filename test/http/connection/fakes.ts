// A connection and its requests as the connection layer sees them, without a network: what
// takeTurns and orderPipelined read of node:http's sockets and responses, and nothing more.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The socket of a connection: read or held the way node:http holds one (its private _paused flag). */
export class FakeSocket extends EventEmitter {
  destroyed = false;
  writable = true;
  writableEnded = false;
  writableNeedDrain = false;
  _paused = false;
  paused = false;
  parser = { resume: (): void => {} };

  pause(): this {
    this.paused = true;
    return this;
  }

  resume(): this {
    this.paused = false;
    this.emit('resume');
    return this;
  }

  /** The client went away (or the server broke the connection). */
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.writable = false;
    this.emit('close');
    return this;
  }
}

/** A response: answered() is its 'close' once the answer has gone out (ended, nothing left to write). */
export class FakeResponse extends EventEmitter {
  writableEnded = false;
  writableLength = 0;
  constructor(readonly req: FakeRequest) {
    super();
  }

  /** Ended, with `bytes` the socket has not taken yet. */
  ended(bytes: number): void {
    this.writableEnded = true;
    this.writableLength = bytes;
  }

  answered(): void {
    this.writableEnded = true;
    this.writableLength = 0;
    this.emit('close');
  }
}

export class FakeRequest {
  constructor(readonly socket: FakeSocket, readonly method: string, readonly url: string) {}
}

/** One request of `socket`, as the pair node:http hands its listener. */
export function request(socket: FakeSocket, method: string, url: string): [IncomingMessage, ServerResponse] {
  const req = new FakeRequest(socket, method, url);
  const res = new FakeResponse(req);
  return [req as unknown as IncomingMessage, res as unknown as ServerResponse];
}

/** Resolves after `n` turns of the event loop (takeTurns serves once per turn, on setImmediate). */
export async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}
