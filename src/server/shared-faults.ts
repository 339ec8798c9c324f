// Faults (POST /__admin/faults) with `--workers N`: set or cleared through one worker, armed
// or cleared in all before the answer goes out, with the same seed, so that a probability
// fault draws the same sequence in every worker; each request a count fault catches, in
// whichever worker, uses up the one `count` (the others are told, and use one too). Exact for
// requests one after another (a harness's client retrying with backoff); requests arriving at
// two workers within the same moment may both be caught as the last one.
import { Faults, type FaultSpec } from '../api/index.js';
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
      if (typeof operation === 'string') this.consume(operation);
    });
  }

  override set(spec: FaultSpec): FaultSpec {
    // The seed is drawn here, once, and sent: every worker then runs the same sequence.
    const armed = super.set(spec);
    this.#shared = this.#peers.ask('faults', { set: armed } satisfies Change);
    return armed;
  }

  override clear(): void {
    super.clear();
    this.#shared = this.#peers.ask('faults', { clear: true } satisfies Change);
  }

  protected override used(operation: string): void {
    this.#peers.tell('fault-taken', operation);
  }

  /** Resolves once every other worker has applied the last set or clear. */
  async shared(): Promise<void> {
    await this.#shared;
  }
}
