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
  return {
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
  };
}

export const silentLogger: Logger = { log() {} };

/** Adapts a plain function `(level, msg, fields) => void` given by an embedder. */
export function functionLogger(fn: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void): Logger {
  return { log: fn };
}
