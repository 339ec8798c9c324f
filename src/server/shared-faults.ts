// Faults (POST /__admin/faults) with `--workers N`: set or cleared through one worker, armed
// or cleared in all before the answer goes out; each faulted request, in whichever worker,
// counts against the one `count` (the others are told, and take one too). Exact for requests
// one after another (a harness's client retrying with backoff); requests arriving at two
// workers within the same moment may both be faulted as the last one.
import { Faults, type Fault, type FaultSpec } from '../api/index.js';
import type { Peers } from './peers.js';

interface Change {
  readonly set?: FaultSpec;
  readonly clear?: true;
}

export class SharedFaults extends Faults {
  readonly #peers: Peers;
  #shared: Promise<unknown> = Promise.resolve();

  constructor(peers: Peers) {
    super();
    this.#peers = peers;
    peers.answer('faults', (payload) => {
      const change = payload as Change;
      if (change.set !== undefined) super.set(change.set);
      else if (change.clear === true) super.clear();
      return true;
    });
    peers.onTold('fault-taken', (operation) => {
      if (typeof operation === 'string') super.take(operation);
    });
  }

  override set(spec: FaultSpec): void {
    super.set(spec);
    this.#shared = this.#peers.ask('faults', { set: spec } satisfies Change);
  }

  override clear(): void {
    super.clear();
    this.#shared = this.#peers.ask('faults', { clear: true } satisfies Change);
  }

  override take(operation: string): Fault | undefined {
    const fault = super.take(operation);
    if (fault !== undefined) this.#peers.tell('fault-taken', operation);
    return fault;
  }

  /** Resolves once every other worker has applied the last set or clear. */
  async shared(): Promise<void> {
    await this.#shared;
  }
}
