// stdout and stderr that neither a closed reader nor an absent one can take the service down
// with.
//
// A closed reader (a harness that reads the ready line and closes the pipe, a log collector
// that restarts) makes the next write fail (EPIPE); node reports that as an 'error' event on
// the stream, and an 'error' event nobody listens to ends the process.
//
// An absent reader (a harness that keeps the pipe open and never reads it) fills the kernel's
// pipe buffer; what cannot be written then waits in memory, and a pending write keeps the
// process alive after a stop. So the log goes through a bound: past MAX_QUEUED_LOG_BYTES
// waiting for the reader, log lines are dropped and counted, and once the
// reader has taken everything a warn line says how many were lost. The lines that must never
// be lost (the ready line, a key printed once) are few and short, and are written whatever
// is queued. A stop waits a bounded time for the reader (settleStdio), then gives up on it.
//
// Everything written to stdout (log lines, the ready line, a key printed once) goes through one
// writer of pieces (pieceWriter). A piece is written to the file descriptor directly
// (fs.writeSync: one system call, none of the stream's bookkeeping). The descriptor of a pipe
// or socket is non-blocking (node made it so when it opened process.stdout), so a reader that
// is behind makes that write fail with EAGAIN, or take part of a piece longer than the pipe's
// atomic size. What is not taken waits in the writer's own queue, piece by piece, and the
// stream is handed ONE piece at a time, the next only once that one is written: node's stream
// joins the chunks waiting in it into one write (writev), and the kernel may take part of such
// a write, cutting a line that another process sharing the pipe (the workers of --workers N)
// then writes into. A piece of at most PIPE_BUF (4096) bytes handed alone to a pipe is written
// whole or not at all, whoever else writes to it; wholeLines() cuts batches into such pieces.
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

let stdoutWriter: PieceWriter | undefined;
let stdoutAlways: Write | undefined;
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

/** What pieceWriter needs of the stream on the same descriptor: how much waits in it, and a write with a callback. */
export interface PieceStream {
  readonly writableLength: number;
  write(chunk: Uint8Array, cb: (err?: Error | null) => void): unknown;
}

/** What pieceWriter needs of a file descriptor: fs.writeSync's shape (a test fakes it). */
export type WriteSync = (fd: number, bytes: Uint8Array, offset: number, length: number) => number;

export interface PieceWriter {
  /**
   * Writes one piece (whole lines; the caller may reuse the bytes once this returns). A piece
   * that is not `must` is dropped, and its lines counted, while more than the bound waits.
   */
  write(bytes: Uint8Array, must?: boolean): void;
  /** Bytes waiting: in the writer's queue and in the stream. */
  pendingBytes(): number;
  /** Calls `fn` once nothing waits any more (at once if nothing does). */
  whenIdle(fn: () => void): void;
}

export interface PieceWriterOptions {
  /** Past this many bytes waiting, pieces that are not `must` are dropped and counted. */
  maxQueuedBytes: number;
  /** Told how many lines were dropped, once everything waiting has been written. */
  onDropped: (droppedLines: number) => void;
  /** Whether the descriptor has failed (then nothing more is written). */
  failed: () => boolean;
  /** Told a write's error other than EAGAIN (EPIPE: the reader is gone). */
  onFail: (err: NodeJS.ErrnoException) => void;
  write?: WriteSync;
}

/**
 * The one way to a descriptor shared with other processes: each piece written whole by one
 * system call when the descriptor takes it now, else queued (a copy), and the queue written in
 * order, one piece at a time, the stream waiting for the reader on behalf of the head piece
 * only (see the top of this file).
 */
export function pieceWriter(fd: number, stream: PieceStream, options: PieceWriterOptions): PieceWriter {
  const writeFd = options.write ?? writeSync;
  const queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let inStream = false;
  let dropped = 0;
  let idle: Array<() => void> = [];

  /** Writes what the descriptor takes now: the count written, or -1 once it has failed. */
  const attempt = (bytes: Uint8Array): number => {
    let done = 0;
    try {
      while (done < bytes.length) done += writeFd(fd, bytes, done, bytes.length - done);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') return done;
      options.onFail(e);
      return -1;
    }
    return done;
  };
  const clear = (): void => {
    queue.length = 0;
    queuedBytes = 0;
  };
  const settled = (): void => {
    if (dropped > 0) {
      const n = dropped;
      dropped = 0;
      options.onDropped(n); // writes a line: when it waits, idle comes after it
      if (inStream || queue.length > 0) return;
    }
    const waiting = idle;
    idle = [];
    for (const fn of waiting) fn();
  };
  /** The reader is behind: the stream waits for it, with this piece (a copy) alone. */
  const toStream = (piece: Uint8Array): void => {
    inStream = true;
    stream.write(piece, () => {
      inStream = false;
      pump();
    });
  };
  const pump = (): void => {
    while (queue.length > 0) {
      if (options.failed()) break;
      const head = queue[0] as Uint8Array;
      const n = attempt(head);
      if (n < 0) break;
      queue.shift();
      queuedBytes -= head.length;
      if (n < head.length) {
        toStream(n === 0 ? head : head.subarray(n));
        return;
      }
    }
    if (options.failed()) {
      clear();
      dropped = 0;
    }
    settled();
  };
  return {
    write(bytes, must = false) {
      if (options.failed()) return;
      if (inStream || queue.length > 0) {
        if (!must && queuedBytes + stream.writableLength > options.maxQueuedBytes) {
          dropped += lineCount(bytes);
          return;
        }
        queue.push(Uint8Array.prototype.slice.call(bytes));
        queuedBytes += bytes.length;
        return;
      }
      const n = attempt(bytes);
      if (n >= 0 && n < bytes.length) toStream(Uint8Array.prototype.slice.call(bytes, n));
    },
    pendingBytes: () => queuedBytes + stream.writableLength,
    whenIdle(fn) {
      if (!inStream && queue.length === 0) fn();
      else idle.push(fn);
    },
  };
}

function lineCount(chunk: Uint8Array): number {
  let n = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n === 0 ? 1 : n;
}

function stdoutFailure(err: NodeJS.ErrnoException): void {
  if (stdoutFailed) return;
  stdoutFailed = true;
  safeStderr()(`petstore: stdout failed (${err.code ?? err.message}); log lines are dropped from now on, the service keeps serving\n`);
}

/** The one writer of this process's stdout. */
function stdoutPieces(): PieceWriter {
  if (stdoutWriter === undefined) {
    const stream = process.stdout; // opened now if not yet: node makes a pipe's descriptor non-blocking
    stream.on('error', stdoutFailure);
    stdoutWriter = pieceWriter(typeof stream.fd === 'number' ? stream.fd : 1, stream, {
      maxQueuedBytes: MAX_QUEUED_LOG_BYTES,
      onDropped: warnDropped,
      failed: () => stdoutFailed,
      onFail: stdoutFailure,
    });
  }
  return stdoutWriter;
}

/** The warn line once log lines dropped for want of a reader can be written again. */
function warnDropped(droppedLines: number): void {
  jsonLogger('warn', (line) => stdoutPieces().write(Buffer.from(line), true)).log('warn', 'log lines dropped: stdout was not read fast enough', { dropped: droppedLines, maxQueuedBytes: MAX_QUEUED_LOG_BYTES });
}

/**
 * Log lines on stdout, one at a time (an embedder's `logger: 'stdout'`): guarded, and
 * bounded (MAX_QUEUED_LOG_BYTES); a failure is reported once on stderr, lines dropped for
 * want of a reader are counted in a warn line.
 */
export function safeStdout(): Write {
  stdoutLog ??= (chunk) => stdoutPieces().write(Buffer.from(chunk));
  return stdoutLog;
}

/**
 * The log's bytes on stdout, one piece per call (wholeLines() cuts a batch into pieces that
 * no other process can cut), bounded as safeStdout is.
 */
export function safeStdoutBytes(): ByteWrite {
  stdoutLogBytes ??= (bytes) => stdoutPieces().write(bytes);
  return stdoutLogBytes;
}

/** stdout, guarded but never dropped: the ready line, a key printed once, --help. */
export function stdoutLine(): Write {
  stdoutAlways ??= (chunk) => stdoutPieces().write(Buffer.from(chunk), true);
  return stdoutAlways;
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
  const err = process.stderr;
  const errPending = (): boolean => !err.destroyed && err.writableLength > 0;
  const outPending = (): boolean => stdoutWriter !== undefined && !stdoutFailed && stdoutWriter.pendingBytes() > 0;
  if (!errPending() && !outPending()) return Promise.resolve(true);
  return new Promise((resolve) => {
    let done = false;
    const timer = setTimeout(() => finish(false), timeoutMs);
    const check = (): void => {
      if (!errPending() && !outPending()) finish(true);
    };
    const finish = (ok: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      err.off('drain', check);
      resolve(ok);
    };
    err.on('drain', check);
    stdoutWriter?.whenIdle(check);
  });
}
