// Plain data shared by every layer. Nothing here knows about HTTP.

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

/** What a client sends to add an animal (already validated). */
export interface NewPet {
  /** 1..256 characters, not blank, no control characters. */
  name: string;
  /** An integer within ±(2^53 − 1). */
  categoryId: number;
  /** `available`, `pending` or `sold`; absent when not given. */
  status?: PetStatus;
}

/** An animal as stored and returned: a NewPet plus the id the service assigned. */
export interface Pet extends NewPet {
  /** Assigned by the service: sequential from 1, never reused. */
  id: number;
}

/** Requests per minute and per day: a plan's limits, a key's, or the keyless budget's. */
export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
}

/** Time, injected so that tests and embedders control it. */
export interface Clock {
  /** Wall-clock time in ms since the Unix epoch (for headers such as X-RateLimit-Reset). */
  now(): number;
  /** Monotonic time in ms from an arbitrary origin (for all interval arithmetic). */
  monotonic(): number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Structured logger; fields never contain an API key. */
export interface Logger {
  /** Writes one line: a level, a message, and fields (never an API key). */
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  /** Whether lines of this level are written; absent means yes. Lets callers skip building fields. */
  enabled?(level: LogLevel): boolean;
  /**
   * Writes one line whose fields are already JSON text, each preceded by a comma
   * (`,"a":1,"b":"x"`), for a hot path that builds them from a fixed template (the access
   * log); the logger adds what log() adds (level, time, pid, hostname, msg). `ascii` true
   * promises that fieldsJson has no character above U+007F (the logger then need not look).
   * Optional: without it, callers use log().
   */
  logJson?(level: LogLevel, msg: string, fieldsJson: string, ascii?: boolean): void;
}
