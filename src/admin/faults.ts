// Injected faults, for harnesses that test their own client's retries. A fault names one
// operation (or "*", every /v1 operation) and does one or two things to the requests it
// catches: wait (delayMs, fixed or a uniform range), then either answer 429 or 503 (Error
// body, Retry-After, nothing done) or break the connection (kind: reset, empty, truncated;
// the request is handled first, so a create is stored). It catches the next `count`
// requests, or each one with a `probability`, drawn from a seeded generator so that a run
// can be repeated. Set, listed and cleared through /__admin/faults; a reset clears them too.
//
// This module decides; the HTTP layer executes: take() says what to do to one request.
import { randomUUID } from 'node:crypto';
import { ANY_OPERATION, MAX_SEED, seededRandom, type ConnectionFault, type DelayRange, type FaultSpec } from './fault-spec.js';

/** A fault as armed: its spec with the seed in use, and what is left of it. */
export interface Fault extends FaultSpec {
  readonly seed: number;
  /** Requests still to catch (count faults); undefined for probability faults. */
  remaining: number | undefined;
  /** Requests caught so far. */
  fired: number;
  /** Values drawn from its generator so far (a snapshot replays them). */
  draws: number;
  /** The next value in [0, 1) of this fault's generator. */
  readonly random: () => number;
  /**
   * Names this arming of the fault, the same in every worker (a count fault's claims are
   * counted by it, so a fault set again starts from nothing).
   */
  readonly armId: string;
  /** Requests it was armed to catch (count faults): its claims across workers stop there. */
  readonly armedCount: number | undefined;
}

/** What to do to one request a fault caught. */
export interface FaultHit {
  /** The fault's operation ("*" or an operationId). */
  readonly operation: string;
  /** Wait this long first (ms; 0 for no wait). */
  readonly delayMs: number;
  /** Then answer this status instead of handling the request... */
  readonly status: 429 | 503 | undefined;
  readonly retryAfter: number;
  /** ...or handle it, then break the connection this way. */
  readonly kind: ConnectionFault | undefined;
}

/** One armed fault as GET /__admin/faults shows it. */
export interface FaultListing {
  operation: string;
  status?: 429 | 503;
  retryAfter?: number;
  kind?: ConnectionFault;
  delayMs?: number | DelayRange;
  /** Count faults: requests still to catch. */
  remaining?: number;
  /** Probability faults: the chance and the seed in use (give it back to repeat the run). */
  probability?: number;
  seed?: number;
  fired: number;
}

/** The faults of one service instance, by operation (a new one replaces the one before). */
export class Faults {
  readonly #byOperation = new Map<string, Fault>();
  /**
   * Faults armed: the request pipeline checks this one field and looks no further while it
   * is 0, so faults cost nothing when none is set.
   */
  armed = 0;
  /** The waits of delay faults under way, each its own end: stop() ends them at once. */
  readonly #waits = new Set<() => void>();
  #stopped = false;

  /**
   * Arms a fault (replacing the one of its operation); returns it as armed, seed chosen.
   * `armId`: the name of this arming, given when another worker armed it (default: a new
   * random one, so that no two armings share their claims).
   */
  set(spec: FaultSpec, armId: string = randomUUID()): FaultSpec {
    const seed = spec.seed ?? Math.floor(Math.random() * (MAX_SEED + 1));
    const armed: FaultSpec = { ...spec, seed };
    this.#arm(armed, spec.count, 0, 0, armId);
    return armed;
  }

  /** The arm id of the fault of `operation` now armed, if any (which arming a worker holds). */
  armIdOf(operation: string): string | undefined {
    return this.#byOperation.get(operation)?.armId;
  }

  #arm(spec: FaultSpec, remaining: number | undefined, fired: number, draws: number, armId: string, armedCount = remaining): void {
    const seed = spec.seed ?? 0;
    const next = seededRandom(seed);
    for (let i = 0; i < draws; i++) next();
    const counted = spec.probability === undefined;
    const fault: Fault = {
      ...spec, seed, remaining: counted ? remaining : undefined, fired, draws, armId, armedCount: counted ? armedCount : undefined,
      random: () => {
        fault.draws++;
        return next();
      },
    };
    this.#byOperation.set(spec.operation, fault);
    this.armed = this.#byOperation.size;
  }

  clear(): void {
    this.#byOperation.clear();
    this.armed = 0;
  }

  /**
   * What to do to this request of `operation`, or undefined: the operation's own fault if it
   * catches the request, else the "*" fault if that one does. A caught request uses up one of
   * a count fault. A promise when the catch must first be granted (a count fault shared by
   * several workers, see claim()).
   */
  take(operation: string): FaultHit | undefined | Promise<FaultHit | undefined> {
    const own = this.#try(this.#byOperation.get(operation));
    if (own === undefined) return this.#try(this.#byOperation.get(ANY_OPERATION));
    if (own instanceof Promise) return own.then((hit) => hit ?? this.#try(this.#byOperation.get(ANY_OPERATION)));
    return own;
  }

  #try(fault: Fault | undefined): FaultHit | undefined | Promise<FaultHit | undefined> {
    if (fault === undefined) return undefined;
    if (fault.probability !== undefined) {
      if (fault.random() >= fault.probability) return undefined;
      return this.#hit(fault);
    }
    const granted = this.claim(fault);
    if (granted === true) return this.#caught(fault);
    if (granted === false) return undefined;
    return granted.then((ok) => {
      if (ok) return this.#caught(fault);
      // Used up by the other workers: gone here too (unless set again meanwhile).
      if (this.#byOperation.get(fault.operation) === fault) this.#drop(fault.operation);
      return undefined;
    });
  }

  /** A count fault caught this request: one used up here, and the other workers told. */
  #caught(fault: Fault): FaultHit {
    this.consume(fault.operation, fault.armId);
    this.used(fault.operation, fault.armId);
    return this.#hit(fault);
  }

  #hit(fault: Fault): FaultHit {
    fault.fired++;
    const delay = fault.delay;
    const delayMs = delay === undefined ? 0 : delay.min === delay.max ? delay.min : delay.min + Math.floor(fault.random() * (delay.max - delay.min + 1));
    return { operation: fault.operation, delayMs, status: fault.status, retryAfter: fault.retryAfter, kind: fault.kind };
  }

  /**
   * Whether this instance may catch one more request with count fault `fault`: in one
   * process, yes (take() stops at its count by itself); several workers ask one counter.
   */
  protected claim(_fault: Fault): boolean | Promise<boolean> {
    return true;
  }

  /**
   * Uses up one request of the count fault of `operation` (caught here, or by another worker),
   * if it is still the arming `armId` (default: whichever is armed).
   */
  consume(operation: string, armId?: string): void {
    const fault = this.#byOperation.get(operation);
    if (fault?.remaining === undefined || (armId !== undefined && fault.armId !== armId)) return;
    if (--fault.remaining <= 0) this.#drop(operation);
  }

  /**
   * Another worker caught a request with the count fault of `operation` as armed `armId`:
   * counted here too, in `fired` as in `remaining`, so that every worker lists the same.
   */
  caughtElsewhere(operation: string, armId: string): void {
    const fault = this.#byOperation.get(operation);
    if (fault?.remaining === undefined || fault.armId !== armId) return;
    fault.fired++;
    this.consume(operation, armId);
  }

  /** Disarms the fault of `operation`, if any. */
  disarm(operation: string): void {
    this.#drop(operation);
  }

  #drop(operation: string): void {
    this.#byOperation.delete(operation);
    this.armed = this.#byOperation.size;
  }

  /** Called when this instance caught a request with a count fault (workers tell the others). */
  protected used(_operation: string, _armId: string): void {}

  /**
   * The wait of a delay fault: resolves after `ms`, or at once once the service is stopping
   * (stop()), so that an injected delay never holds a stop past its grace period.
   */
  wait(ms: number): Promise<void> {
    if (this.#stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        this.#waits.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.#waits.add(end);
    });
  }

  /** The service is stopping: waits under way end now (their requests are served), and later ones do not wait. */
  stop(): void {
    this.#stopped = true;
    for (const end of [...this.#waits]) end();
  }

  /** Every armed fault with what is left of it, in the order they were set. */
  list(): FaultListing[] {
    return [...this.#byOperation.values()].map((f) => {
      const out: FaultListing = { operation: f.operation, fired: f.fired };
      if (f.status !== undefined) {
        out.status = f.status;
        out.retryAfter = f.retryAfter;
      }
      if (f.kind !== undefined) out.kind = f.kind;
      if (f.delay !== undefined) out.delayMs = f.delay.min === f.delay.max ? f.delay.min : { min: f.delay.min, max: f.delay.max };
      if (f.probability === undefined) out.remaining = f.remaining;
      else {
        out.probability = f.probability;
        out.seed = f.seed;
      }
      return out;
    });
  }

  /**
   * The armed faults as a snapshot keeps them: each spec with its seed, what is left, and how
   * far its generator has gone (fired and draws are replayed on restore, so a restored fault
   * goes on with the same sequence).
   */
  save(): SavedFault[] {
    return [...this.#byOperation.values()].map((f) => ({ spec: specOf(f), remaining: f.remaining, fired: f.fired, draws: f.draws }));
  }

  /** The armed faults as a worker that starts takes them over from this one (see adopt()). */
  armedState(): ArmedFault[] {
    return [...this.#byOperation.values()].map((f) => ({
      spec: specOf(f), remaining: f.remaining, fired: f.fired, draws: f.draws, armId: f.armId, armedCount: f.armedCount,
    }));
  }

  /**
   * Arms the faults another worker has armed, as they are there: the same armings, so that the
   * claims of a count fault go on being counted against its one `count`. An operation that has
   * a fault here already keeps it.
   */
  adopt(state: readonly ArmedFault[]): void {
    for (const s of state) {
      if (this.#byOperation.has(s.spec.operation)) continue;
      this.#arm(s.spec, s.remaining, s.fired, s.draws, s.armId, s.armedCount);
    }
  }

  /** Puts back faults saved by save(), replacing every armed one. */
  load(saved: readonly SavedFault[]): void {
    this.clear();
    for (const s of saved) this.#arm(s.spec, s.remaining, s.fired, s.draws, randomUUID());
  }
}

/** A fault as armed in one worker, taken over by a worker that starts (see Faults.adopt). */
export interface ArmedFault extends SavedFault {
  readonly armId: string;
  readonly armedCount: number | undefined;
}

/** A fault in a snapshot. */
export interface SavedFault {
  readonly spec: FaultSpec;
  readonly remaining: number | undefined;
  readonly fired: number;
  /** Values drawn from its generator so far. */
  readonly draws: number;
}

function specOf(f: Fault): FaultSpec {
  return {
    operation: f.operation, status: f.status, kind: f.kind, delay: f.delay, retryAfter: f.retryAfter,
    count: f.count, probability: f.probability, seed: f.seed,
  };
}
