// The store generation: a token, kept in Redis, that every reset and every seed of the shared
// store replaces. Processes that cache what PostgreSQL answered (store/postgres/read-cache.ts)
// may serve from memory only while their cache was filled under the token Redis holds now.
//
// A process learns the token from the reply of the limiter script that every request runs
// before it reads anything (limits/redis/script.ts returns it beside the buckets), so checking
// it costs no round trip of its own. The limiters write here; the read cache reads here. It
// lives in core/ because both sides use it and neither may import the other.

/**
 * What moves the token on for every process (a script in Redis); resolves once Redis has it,
 * with the new token for the gate to take, or with undefined when the advancer has told the
 * gate itself (the Redis link does, the moment the reply is read, so that nothing can come
 * between).
 */
export type AdvanceGeneration = () => Promise<string | undefined>;

export class StoreGeneration {
  #token: string | undefined = undefined;
  readonly #listeners: Array<(token: string | undefined) => void> = [];
  #advance: AdvanceGeneration | undefined;

  constructor(advance?: AdvanceGeneration) {
    this.#advance = advance;
  }

  /**
   * The token as of the latest limiter reply; undefined when it is not known (no reply yet,
   * or the last request could not ask Redis): then nothing may be served from a cache.
   */
  get token(): string | undefined {
    return this.#token;
  }

  /** A limiter reply carried `token` (replies of one connection arrive in the order they ran). */
  observe(token: string): void {
    if (token === this.#token) return;
    this.#set(token);
  }

  /** A limiter request could not reach Redis: the token is unknown until a reply says it again. */
  lost(): void {
    if (this.#token !== undefined) this.#set(undefined);
  }

  /** Called on every change of the token (the read cache empties itself). */
  onChange(fn: (token: string | undefined) => void): void {
    this.#listeners.push(fn);
  }

  setAdvance(advance: AdvanceGeneration): void {
    this.#advance = advance;
  }

  /**
   * Moves the token on in Redis, for every process, and here at once. Rejects when Redis did
   * not take it: the caller (a reset, a seed) must then not report success.
   */
  async advance(): Promise<void> {
    // Forget first: whatever is read from now until Redis answers is not served from a cache.
    this.lost();
    if (this.#advance === undefined) throw new Error('the store generation has no Redis to advance it in');
    const token = await this.#advance();
    if (token !== undefined) this.observe(token);
  }

  #set(token: string | undefined): void {
    this.#token = token;
    for (const fn of this.#listeners) fn(token);
  }
}
