// A worker's line to the other workers of `--workers N`, through the primary (node:cluster
// IPC; see protocol.ts): ask them all and gather their answers (a scrape of the whole
// service), tell them something (a fault armed or used), or claim one unit of a count that
// the primary keeps for all of them (a request caught by a count fault). Alone, or once the primary is
// gone, an ask is answered at once with no answers: a worker never waits on a missing peer.
import type { Peers } from '../server/index.js';
import { ASK_TIMEOUT_MS, MAX_ASK_TIMEOUT_MS, isPrimaryMessage, type PrimaryMessage, type WorkerMessage } from './protocol.js';

/** The IPC channel of a forked process: `process` in a worker. */
export interface Channel {
  send?: (message: WorkerMessage) => boolean;
  readonly connected?: boolean;
  on(event: 'message', fn: (message: unknown) => void): unknown;
  off(event: 'message', fn: (message: unknown) => void): unknown;
}

/** What askEvery() resolves with: the answers, and how many asked did not answer. */
type Asked = Awaited<ReturnType<Peers['askEvery']>>;

export class WorkerPeers implements Peers {
  readonly #channel: Channel;
  readonly #pending = new Map<number, (asked: Asked) => void>();
  readonly #answers = new Map<string, (payload: unknown) => unknown>();
  readonly #told = new Map<string, (payload: unknown) => void>();
  readonly #listener = (m: unknown): void => {
    if (isPrimaryMessage(m)) this.#receive(m);
  };
  #nextId = 1;

  constructor(channel: Channel = process as unknown as Channel) {
    this.#channel = channel;
    channel.on('message', this.#listener);
  }

  async ask(what: string, payload?: unknown): Promise<unknown[]> {
    return (await this.#request({ petstore: 'ask', id: this.#nextId, what, payload })).answers;
  }

  askEvery(what: string, payload: unknown, timeoutMs: number): Promise<Asked> {
    const ms = Math.min(Math.max(1, timeoutMs), MAX_ASK_TIMEOUT_MS);
    return this.#request({ petstore: 'ask', id: this.#nextId, what, payload, timeoutMs: ms }, ms);
  }

  async gather(what: string, maxAgeMs: number): Promise<unknown[]> {
    return (await this.#request({ petstore: 'gather', id: this.#nextId, what, maxAgeMs })).answers;
  }

  #request(message: Extract<WorkerMessage, { id: number }>, timeoutMs = ASK_TIMEOUT_MS): Promise<Asked> {
    if (!this.#send(message)) return Promise.resolve({ answers: [], missing: 0 });
    const id = this.#nextId++;
    return new Promise((resolve) => {
      // The primary answers within timeoutMs; should it die meanwhile, this still ends (and
      // says that nobody answered: the others cannot be known to have heard).
      const timer = setTimeout(() => settle({ answers: [], missing: 1 }), timeoutMs + 1_000);
      const settle = (asked: Asked): void => {
        clearTimeout(timer);
        this.#pending.delete(id);
        resolve(asked);
      };
      this.#pending.set(id, settle);
    });
  }

  tell(what: string, payload?: unknown): void {
    this.#send({ petstore: 'tell', what, payload });
  }

  async claim(name: string, max: number): Promise<boolean> {
    if (this.#channel.send === undefined || this.#channel.connected === false) return true;
    const { answers } = await this.#request({ petstore: 'claim', id: this.#nextId, name, max });
    // No answer: the primary went away meanwhile; the worker's own count decides.
    return answers.length === 0 ? true : answers[0] === true;
  }

  answer(what: string, fn: (payload: unknown) => unknown): void {
    this.#answers.set(what, fn);
  }

  onTold(what: string, fn: (payload: unknown) => void): void {
    this.#told.set(what, fn);
  }

  close(): void {
    this.#channel.off('message', this.#listener);
    for (const settle of this.#pending.values()) settle({ answers: [], missing: 0 });
  }

  /**
   * Whether the message went: send()'s own false only says the channel has a backlog (node
   * queues the message and delivers it all the same), so it is not a failure here; taking it
   * for one answered a claim true without the primary and reused the id of a message sent.
   */
  #send(message: WorkerMessage): boolean {
    if (this.#channel.send === undefined || this.#channel.connected === false) return false;
    try {
      this.#channel.send(message);
      return true;
    } catch {
      return false; // the channel closed between the check and the send: as if alone
    }
  }

  #receive(m: PrimaryMessage): void {
    if (m.petstore === 'answers') {
      this.#pending.get(m.id)?.({ answers: [...m.payloads], missing: m.missing ?? 0 });
    } else if (m.petstore === 'asked') {
      const fn = this.#answers.get(m.what);
      let payload: unknown;
      try {
        payload = fn?.(m.payload);
      } catch {
        payload = undefined; // an answer that failed is left out by the asker
      }
      if (payload instanceof Promise) {
        // An answer that takes a while (a reset clearing Redis): sent once it is known.
        payload.then(
          (p: unknown) => this.#send({ petstore: 'answer', id: m.id, payload: p }),
          () => this.#send({ petstore: 'answer', id: m.id, payload: undefined }),
        );
        return;
      }
      this.#send({ petstore: 'answer', id: m.id, payload });
    } else if (m.petstore === 'told') {
      this.#told.get(m.what)?.(m.payload);
    }
  }
}
