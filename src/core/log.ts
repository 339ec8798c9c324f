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

/** A batch is written once it has this many characters, not only at the end of the turn. */
export const BATCH_CHARS = 65536;
/** The reused output buffer: a batch, and room for the line that takes it past BATCH_CHARS. */
const BUFFER_BYTES = 2 * BATCH_CHARS;

/**
 * Batches lines into one write per event-loop turn (or per BATCH_CHARS): a write to stdout
 * is a system call, and one per request would cost one each. (Holding a batch over several
 * turns, to write less often, was tried: in a callgrind run of the sink alone it cost about
 * 900 instructions a line more, in garbage collection: lines kept past a young-generation
 * collection are copied, then promoted.)
 *
 * The batch is a string (each line appended, nothing copied) until it is written; then it is
 * copied once into a reused buffer. When every line of it is ASCII (the usual case: the access
 * log escapes control characters, and URLs and user agents are mostly ASCII, as its builder
 * tells), that copy is a Latin-1 one, the characters being their UTF-8 bytes; a batch with
 * another character is encoded as UTF-8. (Copying each line into the buffer as it came cost
 * more: a call into node and a flattening per line, 1,000 instructions a line or more in a
 * callgrind run of the sink alone.) `write` gets a view of the buffer, to write or copy before
 * it returns.
 *
 * It starts held, so that warnings logged while starting cannot come before the ready
 * line, which must be the first line on stdout.
 */
export function batchingSink(write: (bytes: Uint8Array) => void): BatchingSink {
  let pending = '';
  let ascii = true;
  let held = true;
  let buffer: Buffer | undefined;
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending === '' || held) return;
    const chunk = pending;
    const latin1 = ascii;
    pending = '';
    ascii = true;
    write(encode(chunk, latin1));
  };
  const encode = (chunk: string, latin1: boolean): Uint8Array => {
    if (latin1) {
      if (chunk.length > BUFFER_BYTES) return Buffer.from(chunk, 'latin1');
      buffer ??= Buffer.allocUnsafeSlow(BUFFER_BYTES);
      return buffer.subarray(0, buffer.write(chunk, 0, 'latin1'));
    }
    if (chunk.length * 3 > BUFFER_BYTES && Buffer.byteLength(chunk) > BUFFER_BYTES) return Buffer.from(chunk, 'utf8');
    buffer ??= Buffer.allocUnsafeSlow(BUFFER_BYTES);
    return buffer.subarray(0, buffer.write(chunk, 0, 'utf8'));
  };
  return {
    sink(line, lineAscii) {
      pending += line;
      if (ascii && lineAscii !== true) ascii = isAscii(line);
      if (held) return;
      if (pending.length >= BATCH_CHARS) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
    release() {
      held = false;
      flush();
    },
    drainTo(other) {
      if (pending !== '') other(pending);
      pending = '';
      ascii = true;
    },
  };
}

/** Adapts a plain function `(level, msg, fields) => void` given by an embedder. */
export function functionLogger(fn: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void): Logger {
  return { log: fn };
}
