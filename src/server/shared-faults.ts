// Faults (POST /__admin/faults) with `--workers N`: set or cleared through one worker, armed
// or cleared in all before the answer goes out, with the same seed, so that a probability
// fault draws the same sequence in every worker. A count fault catches exactly `count`
// requests, however they spread over the workers: each catch is first granted by the primary,
// which counts the claims of every worker on that arming of the fault (Peers.claim); the
// others are then told, so that their listings count it too (fired and remaining). The grant costs a request a
// fault would catch one message to the primary and back; requests no fault is armed for pay
// nothing.
import { Faults, type ArmedFault, type Fault, type FaultSpec } from '../api/index.js';
import type { Peers } from './peers.js';

interface Change {
  readonly set?: FaultSpec;
  /** The arm id of `set`: the same in every worker. */
  readonly armId?: string;
  readonly clear?: true;
}

/** What the others are told when a worker caught a request with a count fault. */
interface Taken {
  readonly operation: string;
  readonly armId: string;
}

export class SharedFaults extends Faults {
  readonly #peers: Peers;
  #shared: Promise<unknown> = Promise.resolve();
  /** Sets and clears so far, here or through another worker. */
  #changes = 0;

  constructor(peers: Peers) {
    super();
    this.#peers = peers;
    peers.answer('faults-armed', () => this.armedState());
    // A worker that starts (the primary restarts one that died) takes over the faults the
    // others have armed, before it serves (see shared()): else it caught nothing, and listed
    // nothing, until the next set. A set or clear meanwhile is newer: then nothing is taken.
    this.#shared = peers.ask('faults-armed').then((answers) => {
      const state = answers.find((a) => Array.isArray(a)) as ArmedFault[] | undefined;
      if (state !== undefined && this.#changes === 0) this.adopt(state);
    });
    peers.answer('faults', (payload) => {
      this.#changes++;
      const change = payload as Change;
      if (change.set !== undefined) super.set(change.set, change.armId);
      else if (change.clear === true) super.clear();
      return true;
    });
    peers.onTold('fault-taken', (payload) => {
      const taken = payload as Taken | undefined;
      if (typeof taken?.operation === 'string' && typeof taken.armId === 'string') this.caughtElsewhere(taken.operation, taken.armId);
    });
  }

  override set(spec: FaultSpec, armId?: string): FaultSpec {
    // The seed and the arm id are drawn here, once, and sent: every worker then runs the same
    // sequence, and counts its claims under the same name.
    this.#changes++;
    const armed = super.set(spec, armId);
    this.#shared = this.#peers.ask('faults', { set: armed, armId: this.armIdOf(armed.operation) } satisfies Change);
    return armed;
  }

  override clear(): void {
    this.#changes++;
    super.clear();
    this.#shared = this.#peers.ask('faults', { clear: true } satisfies Change);
  }

  protected override claim(fault: Fault): Promise<boolean> {
    return this.#peers.claim(`${fault.operation} ${fault.armId}`, fault.armedCount ?? 0);
  }

  protected override used(operation: string, armId: string): void {
    this.#peers.tell('fault-taken', { operation, armId } satisfies Taken);
  }

  /** Resolves once every other worker has applied the last set or clear (at start: once the others' faults are taken over). */
  async shared(): Promise<void> {
    await this.#shared;
  }
}
