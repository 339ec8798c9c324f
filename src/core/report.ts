// Operational events after the start (a signal, a reload done or refused, a stop that went
// wrong, a worker killed): each is a JSON log line, at its level (error: 50), so that a
// pipeline alerting on the log sees it, and also the plain line on stderr it always was, for a
// person at a terminal and the harnesses that wait for it there. A failure before the logger
// exists (a bad flag, a config refused at start) is only the plain line.
import type { LogLevel, Logger } from './types.js';

/** Where the plain line goes: stderr, a line at a time. */
export interface ErrLine {
  err(line: string): void;
}

/**
 * Reports one event: `msg` and `fields` in the JSON line; on stderr `prefix` + msg, and
 * `detail` after a colon when given (a reason, as the plain line always said it).
 */
export type Report = (level: LogLevel, msg: string, fields?: Record<string, unknown>, detail?: string) => void;

export function reporter(logger: Logger, io: ErrLine, prefix: string): Report {
  return (level, msg, fields, detail) => {
    logger.log(level, msg, fields);
    io.err(`${prefix}${msg}${detail === undefined ? '' : `: ${detail}`}`);
  };
}
