// What the admin harness needs from outside it: a worker's line to the other workers of
// `--workers N`. The cluster implements it (src/cluster/peers.ts) and the server passes it in;
// alone, the harness gets none and keeps everything in this process. And what the root's
// /__admin/namespaces acts on (namespaces.ts implements it).
import type { ApiError } from '../core/index.js';

/**
 * A worker's line to the other workers, through the primary: ask them all and gather their
 * answers, tell them something, or claim one unit of a count the primary keeps for all.
 */
export interface Peers {
  /** Asks every other worker; resolves with the answers that came (possibly none). */
  ask(what: string, payload?: unknown): Promise<unknown[]>;
  /**
   * Asks every other worker and waits up to timeoutMs for each one: the answers, and how many
   * of the workers asked did not answer in time (0 when every one did; a worker that exited
   * meanwhile is not counted). The others still act on the ask when they get to it.
   */
  askEvery(what: string, payload: unknown, timeoutMs: number): Promise<{ readonly answers: unknown[]; readonly missing: number }>;
  /**
   * Every worker's answer to `what`, this one's included, from a gather no older than
   * maxAgeMs (shared by every worker); alone, or the primary gone: no answers.
   */
  gather(what: string, maxAgeMs: number): Promise<unknown[]>;
  /** Tells every other worker; no answer. */
  tell(what: string, payload?: unknown): void;
  /**
   * Takes one of the `max` units of `name`, counted by the primary for every worker: true for
   * the first `max` claims of a name, false after. Alone, or the primary gone: true (the
   * worker's own count decides).
   */
  claim(name: string, max: number): Promise<boolean>;
  /** How this worker answers the others' asks of `what`. */
  answer(what: string, fn: (payload: unknown) => unknown): void;
  /** What this worker does when told `what`. */
  onTold(what: string, fn: (payload: unknown) => void): void;
  /** Stops listening (the server is closing). */
  close(): void;
}

/** One namespace as GET /__admin/namespaces lists it. */
export interface NamespaceListing {
  readonly name: string;
  readonly pets: number;
  readonly requests: number;
}

/** What the root's /__admin/namespaces acts on. */
export interface NamespaceControl {
  /** The namespaces in the order they were made; an ApiError where they cannot be had. */
  list(): NamespaceListing[] | ApiError;
  /** Drops one: its state is gone. False for an unknown name. */
  drop(name: string): Promise<boolean | ApiError>;
}
