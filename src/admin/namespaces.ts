// Namespaces (`"admin": {"namespaces": N}`, N above 0): `/ns/{name}` in front of `/v1` or
// `/__admin` selects an isolated world, made by its first request, so that tests running in
// parallel against one service cannot see or change each other's state. A world has its own
// pets (in memory, ids from 1, never written to the data file or PostgreSQL), limiter state,
// idempotency keys, clock offset, journal, faults and snapshots, built by the same factories
// as the root's; keys and plans are the config's, shared. The root lists and drops them
// (GET and DELETE /__admin/namespaces); each resets on its own.
import { ApiError, ServiceClock, type Clock } from '../core/index.js';
import type { Limiter } from '../limits/index.js';
import type { LocalPetStore } from '../store/index.js';
import type { NamespaceControl, NamespaceListing } from './contract.js';
import { Faults } from './faults.js';
import { openHarness, type Harness } from './harness.js';

/** What a namespace's path starts with. */
export const NAMESPACE_PREFIX = '/ns/';
/** A namespace's name: 1 to 64 of A-Z a-z 0-9 . _ - (as a snapshot's). */
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The state a world keeps, from the root's factories: its store and its two limiters. */
export interface WorldState {
  readonly store: LocalPetStore;
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
}

export interface NamespaceWorld extends WorldState {
  readonly name: string;
  /** The path prefix of every URL written inside it: `/ns/{name}`. */
  readonly prefix: string;
  /** The root's real time, with an offset of its own. */
  readonly clock: ServiceClock;
  /** Its faults, journal, snapshots and reset (its `/__admin`). */
  readonly harness: Harness;
  /** Requests routed into it so far. */
  requests: number;
}

/** The request path's side: a world by name, made on first use. */
export interface NamespaceSelect {
  select(name: string): NamespaceWorld | ApiError;
}

export interface NamespacesOptions {
  /** How many there may be at once (admin.namespaces). */
  readonly bound: number;
  /** Each world's journal size (admin.journal). */
  readonly journalSize: number;
  /** The root's clock: a world's clock is its real time (the root's offset left out) plus the world's own offset. */
  readonly rootClock: ServiceClock;
  /** Makes a world's store and limiters, on the world's clock, as the root's are made. */
  readonly open: (clock: ServiceClock) => WorldState;
}

export function namespaceNameError(name: string): ApiError | undefined {
  if (NAME.test(name)) return undefined;
  return new ApiError('invalid_request', `The namespace name ${JSON.stringify(name.slice(0, 80))} is not valid: give 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-' (/ns/{name}/v1/...).`);
}

export class Namespaces implements NamespaceControl, NamespaceSelect {
  readonly #worlds = new Map<string, NamespaceWorld>();
  readonly #opts: NamespacesOptions;
  readonly #realTime: Clock;

  constructor(opts: NamespacesOptions) {
    this.#opts = opts;
    const root = opts.rootClock;
    this.#realTime = { now: () => root.now() - root.offsetMs, monotonic: () => root.monotonic() - root.offsetMs };
  }

  select(name: string): NamespaceWorld | ApiError {
    const known = this.#worlds.get(name);
    if (known !== undefined) return known;
    const bad = namespaceNameError(name);
    if (bad !== undefined) return bad;
    if (this.#worlds.size >= this.#opts.bound) {
      return new ApiError('conflict', `There are already ${this.#worlds.size} namespaces, the most admin.namespaces allows (${this.#opts.bound}); drop one with DELETE /__admin/namespaces/{name} first. Namespace ${JSON.stringify(name)} was not made.`);
    }
    const world = this.#make(name);
    this.#worlds.set(name, world);
    return world;
  }

  list(): NamespaceListing[] {
    return [...this.#worlds.values()].map((w) => ({ name: w.name, pets: w.store.count, requests: w.requests }));
  }

  async drop(name: string): Promise<boolean> {
    const world = this.#worlds.get(name);
    if (world === undefined) return false;
    this.#worlds.delete(name);
    world.harness.stop();
    await Promise.allSettled([world.store.close(), world.keyLimiter.close(), world.addressLimiter.close()]);
    return true;
  }

  /** Every world, for a reload to reconfigure their limiters. */
  worlds(): IterableIterator<NamespaceWorld> {
    return this.#worlds.values();
  }

  /** The service is stopping: every world's requests waiting out an injected delay are served now. */
  stop(): void {
    for (const world of this.#worlds.values()) world.harness.stop();
  }

  /** The service has stopped: every world's state is let go. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#worlds.keys()].map((name) => this.drop(name)));
  }

  #make(name: string): NamespaceWorld {
    const clock = new ServiceClock(this.#realTime);
    const state = this.#opts.open(clock);
    const harness = openHarness({
      clock, faults: new Faults(), journalSize: this.#opts.journalSize, peers: undefined,
      store: state.store, keyLimiter: state.keyLimiter, addressLimiter: state.addressLimiter, postgres: false,
    });
    return { ...state, name, prefix: `${NAMESPACE_PREFIX}${name}`, clock, harness, requests: 0 };
  }
}

/** Namespaces where they cannot be had (with --workers): every use is a 501 saying why. */
export class NoNamespaces implements NamespaceControl, NamespaceSelect {
  readonly #why: string;

  constructor(why: string) {
    this.#why = why;
  }

  select(): ApiError {
    return this.#error();
  }

  list(): ApiError {
    return this.#error();
  }

  drop(): Promise<ApiError> {
    return Promise.resolve(this.#error());
  }

  #error(): ApiError {
    return new ApiError('not_implemented', `Namespaces are not available here: ${this.#why}.`);
  }
}
