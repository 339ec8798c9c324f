// Faults (POST /__admin/faults) with `--workers N`: set or cleared through one worker, armed
// or cleared in all before the answer goes out, with the same seed, so that a probability
// fault draws the same sequence in every worker; sets and clears crossing on their way end
// the same everywhere (see Stamp), and a worker that starts takes over what the others have
// armed. A count fault catches exactly `count` requests, however they spread over the
// workers: each catch is first granted by the primary, which counts the claims of every worker
// on that arming of the fault (Peers.claim); the others are then told, so that their listings
// count it too (fired and remaining). The grant costs a request a fault would catch one
// message to the primary and back; requests no fault is armed for pay nothing.
import { randomUUID } from 'node:crypto';
import type { Peers } from './contract.js';
import type { FaultSpec } from './fault-spec.js';
import { Faults, type ArmedFault, type Fault } from './faults.js';

/**
 * When a set or clear was made: a Lamport clock (one more than the highest seen) and, to order
 * two made at the same count, the arm id of the set (a random id for a clear). Every worker
 * orders changes by it, so that sets and clears crossing on their way between workers leave
 * every worker with the same faults: the newest set of each operation, unless a newer clear.
 */
type Stamp = readonly [number, string];

function isStamp(s: unknown): s is Stamp {
  return Array.isArray(s) && s.length === 2 && Number.isInteger(s[0]) && typeof s[1] === 'string';
}

/** Whether `a` was made after `b` (after nothing: yes). */
function newer(a: Stamp, b: Stamp | undefined): boolean {
  return b === undefined || a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

interface Change {
  readonly set?: FaultSpec;
  /** The arm id of `set`: the same in every worker. */
  readonly armId?: string;
  readonly clear?: true;
  readonly stamp: Stamp;
}

/** What a worker that starts takes over (see the constructor). */
interface Armed {
  readonly faults: ArmedFault[];
  readonly stamps: Array<[string, Stamp]>;
  readonly cleared: Stamp | undefined;
  readonly clock: number;
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
  /** The highest stamp count seen. */
  #clock = 0;
  /** The stamp of the set in force for each operation (since the last clear). */
  readonly #stamps = new Map<string, Stamp>();
  /** The stamp of the last clear. */
  #cleared: Stamp | undefined;

  constructor(peers: Peers) {
    super();
    this.#peers = peers;
    peers.answer('faults-armed', (): Armed => ({ faults: this.armedState(), stamps: [...this.#stamps], cleared: this.#cleared, clock: this.#clock }));
    // A worker that starts (the primary restarts one that died) takes over the faults the
    // others have armed, before it serves (see shared()): else it caught nothing, and listed
    // nothing, until the next set. A set or clear meanwhile is newer: then nothing is taken.
    this.#shared = peers.ask('faults-armed').then((answers) => {
      const armed = answers.find((a) => Array.isArray((a as Armed | undefined)?.faults)) as Armed | undefined;
      if (armed === undefined || this.#changes !== 0) return;
      this.adopt(armed.faults);
      for (const [operation, stamp] of armed.stamps) this.#stamps.set(operation, stamp);
      this.#cleared = armed.cleared;
      this.#clock = armed.clock;
    });
    peers.answer('faults', (payload) => {
      this.#apply(payload as Change);
      return true;
    });
    peers.onTold('fault-taken', (payload) => {
      const taken = payload as Taken | undefined;
      if (typeof taken?.operation === 'string' && typeof taken.armId === 'string') this.caughtElsewhere(taken.operation, taken.armId);
    });
  }

  /** A set or clear made through another worker: applied unless something newer was. */
  #apply(change: Change): void {
    const stamp = change.stamp;
    if (!isStamp(stamp)) return;
    this.#changes++;
    if (stamp[0] > this.#clock) this.#clock = stamp[0];
    if (change.set !== undefined) {
      const operation = change.set.operation;
      if (!newer(stamp, this.#cleared) || !newer(stamp, this.#stamps.get(operation))) return;
      this.#stamps.set(operation, stamp);
      super.set(change.set, change.armId);
    } else if (change.clear === true) {
      if (!newer(stamp, this.#cleared)) return;
      this.#cleared = stamp;
      for (const [operation, set] of this.#stamps) {
        if (newer(set, stamp)) continue;
        this.#stamps.delete(operation);
        this.disarm(operation);
      }
    }
  }

  override set(spec: FaultSpec, armId?: string): FaultSpec {
    // The seed and the arm id are drawn here, once, and sent: every worker then runs the same
    // sequence, and counts its claims under the same name.
    this.#changes++;
    const id = armId ?? randomUUID();
    const armed = super.set(spec, id);
    const stamp: Stamp = [++this.#clock, id];
    this.#stamps.set(armed.operation, stamp);
    this.#shared = this.#peers.ask('faults', { set: armed, armId: id, stamp } satisfies Change);
    return armed;
  }

  override clear(): void {
    this.#changes++;
    super.clear();
    const stamp: Stamp = [++this.#clock, randomUUID()];
    this.#cleared = stamp;
    this.#stamps.clear();
    this.#shared = this.#peers.ask('faults', { clear: true, stamp } satisfies Change);
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
