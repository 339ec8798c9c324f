// JSON-lines logging in pino's field names (level numbers, time, pid, hostname, msg), so
// `pino-pretty` can read the output. Never given an API key: callers pass key names only.
import { hostname } from 'node:os';
import type { LogLevel, Logger } from './types.js';

const LEVELS: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50 };

export type LogSink = (line: string) => void;

export function jsonLogger(minLevel: LogLevel | 'silent', sink: LogSink): Logger {
  if (minLevel === 'silent') return silentLogger;
  const min = LEVELS[minLevel];
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  // logJson's hot caller passes the same message every time: serialized once.
  let lastMsg = '';
  let lastMsgTail = ',"msg":""}\n';
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
    logJson(level, msg, fieldsJson) {
      const n = LEVELS[level];
      if (n < min) return;
      if (msg !== lastMsg) {
        lastMsg = msg;
        lastMsgTail = `,"msg":${JSON.stringify(msg)}}\n`;
      }
      // Lines written in the same millisecond (dozens under load) share their head: the time
      // is written as text once a millisecond, not once a line.
      const time = Date.now();
      if (time !== lastTime || n !== lastLevel) {
        lastTime = time;
        lastLevel = n;
        lastHead = `{"level":${n},"time":${time}${base}`;
      }
      sink(lastHead + fieldsJson + lastMsgTail);
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

/**
 * Batches lines into one write per event-loop turn (or per 64 KiB): stdout to a pipe or a
 * file is a synchronous write in node, and one per request would cost a syscall each.
 * It starts held, so that warnings logged while starting cannot come before the ready
 * line, which must be the first line on stdout.
 */
export function batchingSink(write: (chunk: string) => void): BatchingSink {
  let pending = '';
  let scheduled = false;
  let held = true;
  const flush = (): void => {
    scheduled = false;
    if (pending === '' || held) return;
    const chunk = pending;
    pending = '';
    write(chunk);
  };
  return {
    sink(line) {
      pending += line;
      if (held) return;
      if (pending.length >= 65536) flush();
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
    },
  };
}

/** Adapts a plain function `(level, msg, fields) => void` given by an embedder. */
export function functionLogger(fn: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void): Logger {
  return { log: fn };
}
