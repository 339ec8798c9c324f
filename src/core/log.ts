// JSON-lines logging in pino's field names (level numbers, time, pid, hostname, msg), so
// `pino-pretty` can read the output. Never given an API key: callers pass key names only.
import { hostname } from 'node:os';
import type { LogLevel, Logger } from './types.js';

const LEVELS: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50 };

/**
 * Takes one whole line (ending in a newline). `ascii` true promises that every character of
 * it is below U+0080 (then its UTF-8 bytes are its characters, and it can be copied as
 * such); absent or false, the sink finds out itself.
 */
export type LogSink = (line: string, ascii?: boolean) => void;

/** Whether every character of `s` is below U+0080. */
export function isAscii(s: string): boolean {
  return !NON_ASCII.test(s);
}

const NON_ASCII = /[^\x00-\x7f]/;

export function jsonLogger(minLevel: LogLevel | 'silent', sink: LogSink): Logger {
  if (minLevel === 'silent') return silentLogger;
  const min = LEVELS[minLevel];
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  const baseAscii = isAscii(base);
  // logJson's hot caller passes the same message every time: serialized once.
  let lastMsg = '';
  let lastMsgTail = ',"msg":""}\n';
  let lastMsgAscii = true;
  let lastTime = -1;
  let lastLevel = 0;
  let lastHead = '';
  return {
    enabled: (level) => LEVELS[level] >= min,
    log(level, msg, fields) {
      const n = LEVELS[level];
      if (n < min) return;
      let line = `{"level":${n},"time":${Date.now()}${base}`;
      if (fields) {
        for (const k in fields) {
          // Like pino (JSON.stringify), an undefined field is left out rather than written as null.
          const value = JSON.stringify(fields[k]);
          if (value !== undefined) line += `,${JSON.stringify(k)}:${value}`;
        }
      }
      sink(`${line},"msg":${JSON.stringify(msg)}}\n`);
    },
    logJson(level, msg, fieldsJson, ascii) {
      const n = LEVELS[level];
      if (n < min) return;
      if (msg !== lastMsg) {
        lastMsg = msg;
        lastMsgTail = `,"msg":${JSON.stringify(msg)}}\n`;
        lastMsgAscii = isAscii(lastMsgTail);
      }
      // Lines written in the same millisecond (dozens under load) share their head: the time
      // is written as text once a millisecond, not once a line.
      const time = Date.now();
      if (time !== lastTime || n !== lastLevel) {
        lastTime = time;
        lastLevel = n;
        lastHead = `{"level":${n},"time":${time}${base}`;
      }
      sink(lastHead + fieldsJson + lastMsgTail, ascii === true && lastMsgAscii && baseAscii);
    },
  };
}

export const silentLogger: Logger = { log() {}, enabled: () => false };

export interface BatchingSink {
  readonly sink: LogSink;
  /** Write what is pending now (at shutdown). */
  flush(): void;
  /** Start writing: lines logged before this are held (see below). */
  release(): void;
  /** Hand the held lines to another writer instead (a start that failed: stderr). */
  drainTo(write: (chunk: string) => void): void;
}

/** A batch is written once it has this many bytes, not only at the end of the turn. */
export const BATCH_BYTES = 65536;
/** The reused output buffer: a batch, and room for the line that takes it past BATCH_BYTES. */
const BUFFER_BYTES = 2 * BATCH_BYTES;
/** At most one write per this many milliseconds while lines keep coming (see batchingSink). */
export const MIN_WRITE_INTERVAL_MS = 2;

/**
 * Batches lines into one write per event-loop turn, or fewer: a write to stdout is a system
 * call (and a wake-up of its reader), and one per request would cost one each. At the end of
 * a turn the batch is written at once, unless the last write was less than
 * MIN_WRITE_INTERVAL_MS ago: then it is written when that interval is over, with whatever the
 * turns meanwhile added (under load a turn may take a fraction of a millisecond). A batch of
 * BATCH_BYTES is written at once, and flush() writes at once (at shutdown).
 *
 * Each line is copied into a reused buffer as it comes, while the pieces it was built from
 * are still in the CPU's cache (a batch kept as one long string and copied at the end of the
 * turn paid a cache miss per piece). A line that is all ASCII (the usual case: the access
 * log escapes control characters, and URLs and user agents are mostly ASCII) is copied as
 * Latin-1, its characters being its UTF-8 bytes; any other is encoded as UTF-8. A line too
 * large for the buffer is written on its own, after what came before it. `write` gets a view
 * of the buffer, to write or copy before it returns.
 *
 * It starts held (the lines kept as text), so that warnings logged while starting cannot come
 * before the ready line, which must be the first line on stdout.
 */
export function batchingSink(write: (bytes: Uint8Array) => void, now: () => number = performance.now.bind(performance)): BatchingSink {
  const buffer = Buffer.allocUnsafeSlow(BUFFER_BYTES);
  let used = 0;
  let held: string[] | undefined = [];
  /** A write is coming: at the end of this turn (setImmediate) or after the interval (timer). */
  let scheduled = false;
  let timer: NodeJS.Timeout | undefined;
  let lastWrite = -Infinity;
  const flush = (): void => {
    scheduled = false;
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (used === 0) return;
    const n = used;
    used = 0;
    lastWrite = now();
    write(buffer.subarray(0, n));
  };
  const endOfTurn = (): void => {
    const wait = lastWrite + MIN_WRITE_INTERVAL_MS - now();
    if (wait > 0 && used > 0) timer = setTimeout(flush, wait);
    else flush();
  };
  const add = (line: string, ascii: boolean): void => {
    if (ascii) {
      if (used + line.length > BUFFER_BYTES) {
        flush();
        if (line.length > BUFFER_BYTES) {
          write(Buffer.from(line, 'latin1'));
          return;
        }
      }
      used += buffer.write(line, used, 'latin1');
    } else {
      // Up to 3 bytes a character (a surrogate pair is 4 bytes for 2).
      if (used + line.length * 3 > BUFFER_BYTES) {
        flush();
        if (line.length * 3 > BUFFER_BYTES) {
          write(Buffer.from(line, 'utf8'));
          return;
        }
      }
      used += buffer.write(line, used, 'utf8');
    }
    if (used >= BATCH_BYTES) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(endOfTurn);
    }
  };
  return {
    sink(line, ascii) {
      if (held !== undefined) held.push(line);
      else add(line, ascii === true || isAscii(line));
    },
    flush,
    release() {
      if (held === undefined) return;
      const lines = held;
      held = undefined;
      for (const line of lines) add(line, isAscii(line));
      flush();
    },
    drainTo(other) {
      if (held !== undefined && held.length > 0) other(held.join(''));
      if (held !== undefined) held = [];
    },
  };
}

/** Adapts a plain function `(level, msg, fields) => void` given by an embedder. */
export function functionLogger(fn: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void): Logger {
  return { log: fn };
}
