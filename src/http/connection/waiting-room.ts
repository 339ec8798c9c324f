// Connections waiting, unread, to be read when there is room (turns.ts): new connections, read
// newest first, so that a newcomer is read at the next chance instead of behind every
// connection a flood has waiting; and pipelining connections to be read again, oldest first,
// after every new one. A connection its client closes meanwhile is skipped.
import type { Socket } from 'node:net';

export class WaitingRoom {
  /** New connections, the newest last. */
  readonly #fresh: Socket[] = [];
  /** Connections to be read again, the oldest at #head. */
  readonly #again: Socket[] = [];
  #head = 0;
  /** How many of them their clients have closed (taken out once they are half). */
  #gone = 0;

  get size(): number {
    return this.#fresh.length + this.#again.length - this.#head;
  }

  /** How many new connections wait (some may be closed meanwhile). */
  get newOnes(): number {
    return this.#fresh.length;
  }

  add(socket: Socket, again: boolean): void {
    (again ? this.#again : this.#fresh).push(socket);
    socket.once('close', this.#closed);
  }

  /** The next to read (the newest new connection, else the oldest other unless `newOnly`), or undefined. */
  next(newOnly = false): Socket | undefined {
    for (;;) {
      let socket: Socket | undefined;
      if (this.#fresh.length > 0) socket = this.#fresh.pop();
      else if (!newOnly && this.#head < this.#again.length) {
        socket = this.#again[this.#head];
        this.#again[this.#head++] = undefined as unknown as Socket;
        if (this.#head === this.#again.length) {
          this.#again.length = 0;
          this.#head = 0;
        }
      }
      if (socket === undefined) return undefined;
      if (!socket.destroyed) {
        socket.removeListener('close', this.#closed);
        return socket;
      }
      this.#gone--;
    }
  }

  readonly #closed = (): void => {
    if (++this.#gone <= this.size >> 1) return;
    const fresh = this.#fresh.filter((s) => !s.destroyed);
    const again = this.#again.slice(this.#head).filter((s) => !s.destroyed);
    this.#fresh.length = 0;
    this.#fresh.push(...fresh);
    this.#again.length = 0;
    this.#again.push(...again);
    this.#head = 0;
    this.#gone = 0;
  };
}
