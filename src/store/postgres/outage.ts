// When an outage of PostgreSQL begins and ends, for the log and for readiness: one line when
// it begins, one when it ends, whatever order the answers and failures of statements arrive in.
//
// Answers and failures do not arrive in the order their statements were sent. A statement
// handed to the driver just before the engine came back may be stuck on a connection attempt
// made while the engine was still starting up (refused with "the database system is starting
// up", or left without an answer until connect_timeout), and fail after another statement has
// been answered; during a shutdown, a statement sent before it may be answered after the
// first failure. Taken in arrival order, each of those would log a new outage or a new end.
// So each statement gets a number when it is sent, and what it tells is dated by that number:
//
// - a failure begins an outage only if no answer arrived after its statement was sent (an
//   answer since then says the engine was there after the failure's cause);
// - an answer ends an outage only if its statement was sent after the outage began (an older
//   one says nothing of whether the engine is back).
//
// An engine that answers a statement sent after the outage began, then fails one sent after
// that answer, really went away twice: that is two outages, each logged.
import type { Logger } from '../../core/index.js';

/** `unreachable`: no answer; `refused`: the server (or a pooler) refuses the connection. */
export type OutageKind = 'unreachable' | 'refused';

export class OutageReport {
  readonly #logger: Logger;
  readonly #shown: string;
  /** Statements sent so far: the number of the last one sent. */
  #sent = 0;
  /** `#sent` when the latest answer arrived: every statement up to it was sent before that answer. */
  #answeredAfter = 0;
  /** While down: `#sent` when the outage began. */
  #since = 0;
  #down: false | OutageKind = false;
  /** Failures that arrived after a newer answer (not the start of an outage). */
  readonly stats = { staleFailures: 0, staleAnswers: 0 };

  /** `shown`: the store URL without its password, for the log lines. */
  constructor(logger: Logger, shown: string) {
    this.#logger = logger;
    this.#shown = shown;
  }

  /** Whether an outage is on, and of which kind. */
  get down(): false | OutageKind {
    return this.#down;
  }

  /** A statement is sent now: its number, to date what its answer or failure tells. */
  send(): number {
    return ++this.#sent;
  }

  /** Statement `seq` was answered (a result, or an error of a working engine). */
  answered(seq: number): void {
    this.#answeredAfter = this.#sent;
    if (this.#down === false) return;
    if (seq <= this.#since) {
      this.stats.staleAnswers++;
      return;
    }
    this.#down = false;
    this.#logger.log('info', 'PostgreSQL answers again', { store: this.#shown });
  }

  /**
   * Statement `seq` failed because the engine is away (`change` undefined) or refuses the
   * connection (`change`: what to change). Returns whether this failure began an outage (or
   * changed its kind), that is whether a line was logged.
   */
  failed(seq: number, message: string, change?: string): boolean {
    const kind: OutageKind = change === undefined ? 'unreachable' : 'refused';
    if (this.#down === kind) return false;
    if (seq <= this.#answeredAfter || (this.#down !== false && seq <= this.#since)) {
      this.stats.staleFailures++;
      return false;
    }
    this.#down = kind;
    this.#since = this.#sent;
    if (change === undefined) {
      this.#logger.log('error', 'PostgreSQL unreachable; requests get 503 until it answers again', { store: this.#shown, err: message });
    } else {
      this.#logger.log('error', "PostgreSQL refuses petstore's connections; requests get 503 until it accepts them", { store: this.#shown, err: message, change });
    }
    return true;
  }
}
