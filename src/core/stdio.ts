// stdout and stderr that neither a closed reader nor an absent one can take the service down
// with.
//
// A closed reader (a harness that reads the ready line and closes the pipe, a log collector
// that restarts) makes the next write fail (EPIPE); node reports that as an 'error' event on
// the stream, and an 'error' event nobody listens to ends the process.
//
// An absent reader (a harness that keeps the pipe open and never reads it) fills the kernel's
// pipe buffer; node then queues every further write in memory, without bound, and its pending
// writes keep the process alive after a stop. So the log goes through a bound: past
// MAX_QUEUED_LOG_BYTES waiting in the stream, log lines are dropped and counted, and once the
// reader has taken everything a warn line says how many were lost. The lines that must never
// be lost (the ready line, a key printed once) are few and short, and are written whatever
// is queued. A stop waits a bounded time for the reader (settleStdio), then gives up on it.
//
// Log lines do not go through the stream when they need not: a batch of them is written to
// the file descriptor directly (fs.writeSync), which costs one system call and none of the
// stream's bookkeeping. The descriptor of a pipe or socket is non-blocking (node made it so
// when it opened process.stdout), so a reader that is behind makes that write fail with
// EAGAIN or take part of the batch: the rest then goes to the stream, which waits for the
// reader, and every later write goes behind it through the stream while anything waits
// there, so nothing is reordered.
//
// The writers are per process, like the streams they guard, so that every logger of every
// instance shares one listener per stream.
import { writeSync } from 'node:fs';
import { jsonLogger } from './log.js';

export type Write = (chunk: string) => void;
/** Writes bytes, or copies what it keeps: the caller may reuse them once it returns. */
export type ByteWrite = (bytes: Uint8Array) => void;

/** Log bytes that may wait in stdout for a reader before further log lines are dropped. */
export const MAX_QUEUED_LOG_BYTES = 1024 * 1024;

let stdoutAlways: ((chunk: string | Uint8Array) => void) | undefined;
let stdoutLog: Write | undefined;
let stdoutLogBytes: ByteWrite | undefined;
let stderr: Write | undefined;
/** Set once stdout has failed (by the stream's 'error' event or a direct write's error). */
let stdoutFailed = false;

/**
 * Writes to `stream` until it fails; from then on what it is given is dropped (a log line
 * is not worth the service), and `onFail` is told once.
 */
export function guardedWriter(stream: NodeJS.WritableStream, onFail: (err: NodeJS.ErrnoException) => void = () => undefined): Write {
  let failed = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    onFail(err);
  });
  return (chunk) => {
    if (!failed) stream.write(chunk);
  };
}

/** What boundedWriter needs of a stream: how much waits in it, and its 'drain' event. */
export interface Queue {
  readonly writableLength: number;
  once(event: 'drain', fn: () => void): unknown;
}

/**
 * `write`, unless more than maxQueuedBytes already wait in `queue`: then the chunk (whole
 * log lines) is dropped and its lines counted, and once the queue has drained `onResume` is
 * told the count (it writes the warn line).
 */
export function boundedWriter<C extends string | Uint8Array = string>(queue: Queue, write: (chunk: C) => void, maxQueuedBytes: number, onResume: (droppedLines: number) => void): (chunk: C) => void {
  let dropped = 0;
  let waiting = false;
  return (chunk) => {
    if (queue.writableLength <= maxQueuedBytes) {
      write(chunk);
      return;
    }
    dropped += lineCount(chunk);
    if (waiting) return;
    waiting = true;
    queue.once('drain', () => {
      waiting = false;
      const n = dropped;
      dropped = 0;
      if (n > 0) onResume(n);
    });
  };
}

function lineCount(chunk: string | Uint8Array): number {
  let n = 0;
  const nl = typeof chunk === 'string' ? '\n' : 10;
  for (let i = chunk.indexOf(nl as never); i !== -1; i = chunk.indexOf(nl as never, i + 1)) n++;
  return n === 0 ? 1 : n;
}

/** What directWriter needs of a file descriptor: fs.writeSync's shape (a test fakes it). */
export type WriteSync = (fd: number, bytes: Uint8Array, offset: number, length: number) => number;

/**
 * Writes bytes to `fd` at once (fs.writeSync), unless something already waits in `queue`
 * (the stream on the same descriptor): then, and for what a full pipe or socket did not take
 * (EAGAIN, or a part written), `later` gets a copy, to write behind what waits. Any other
 * error (EPIPE: the reader is gone) goes to `onFail`; nothing is written once `failed()`.
 */
export function directWriter(fd: number, queue: Queue, later: ByteWrite, failed: () => boolean, onFail: (err: NodeJS.ErrnoException) => void, write: WriteSync = writeSync): ByteWrite {
  return (bytes) => {
    if (failed()) return;
    if (queue.writableLength > 0) {
      later(Buffer.from(bytes));
      return;
    }
    let done = 0;
    try {
      while (done < bytes.length) done += write(fd, bytes, done, bytes.length - done);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') later(Buffer.from(bytes.subarray(done)));
      else onFail(e);
    }
  };
}

function stdoutFailure(err: NodeJS.ErrnoException): void {
  if (stdoutFailed) return;
  stdoutFailed = true;
  safeStderr()(`petstore: stdout failed (${err.code ?? err.message}); log lines are dropped from now on, the service keeps serving\n`);
}

function guardedStdout(): (chunk: string | Uint8Array) => void {
  if (stdoutAlways === undefined) {
    const stream = process.stdout;
    stream.on('error', stdoutFailure);
    stdoutAlways = (chunk) => {
      if (!stdoutFailed) stream.write(chunk);
    };
  }
  return stdoutAlways;
}

/** The warn line once log lines dropped for want of a reader can be written again. */
function warnDropped(droppedLines: number): void {
  jsonLogger('warn', guardedStdout()).log('warn', 'log lines dropped: stdout was not read fast enough', { dropped: droppedLines, maxQueuedBytes: MAX_QUEUED_LOG_BYTES });
}

/**
 * process.stdout for log lines: guarded, and bounded (MAX_QUEUED_LOG_BYTES); a failure is
 * reported once on stderr, lines dropped for want of a reader are counted in a warn line.
 */
export function safeStdout(): Write {
  stdoutLog ??= boundedWriter<string>(process.stdout, guardedStdout(), MAX_QUEUED_LOG_BYTES, warnDropped);
  return stdoutLog;
}

/**
 * The log's bytes on stdout: written to its descriptor directly while nothing waits in the
 * stream (directWriter), else through it, bounded as safeStdout is.
 */
export function safeStdoutBytes(): ByteWrite {
  if (stdoutLogBytes === undefined) {
    const stream = process.stdout; // opened now if not yet: node makes a pipe's descriptor non-blocking
    const queued = boundedWriter<Uint8Array>(stream, guardedStdout(), MAX_QUEUED_LOG_BYTES, warnDropped);
    stdoutLogBytes = directWriter(typeof stream.fd === 'number' ? stream.fd : 1, stream, queued, () => stdoutFailed, stdoutFailure);
  }
  return stdoutLogBytes;
}

/** process.stdout, guarded but never dropped: the ready line, a key printed once, --help. */
export function stdoutLine(): Write {
  return guardedStdout();
}

/** process.stderr, guarded (one line per start, stop or reload: nothing to bound). */
export function safeStderr(): Write {
  stderr ??= guardedWriter(process.stderr);
  return stderr;
}

/**
 * Resolves true once stdout and stderr have handed everything to their readers, or false
 * after timeoutMs (nobody reads them). Then the process can only end by process.exit: node's
 * pending writes to a pipe keep it alive for as long as the pipe stays full.
 */
export function settleStdio(timeoutMs: number): Promise<boolean> {
  const streams = [process.stdout, process.stderr];
  const pending = (): boolean => streams.some((s) => !s.destroyed && s.writableLength > 0);
  if (!pending()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(false), timeoutMs);
    const check = (): void => {
      if (!pending()) finish(true);
    };
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      for (const s of streams) s.off('drain', check);
      resolve(ok);
    };
    for (const s of streams) s.on('drain', check);
  });
}
