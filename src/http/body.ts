// Reading a JSON request body with a hard size bound. The bound is enforced from
// Content-Length before reading anything, and again while streaming (chunked uploads).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../core/index.js';

/** Thrown for 413: the caller must answer, then drain or close (see drain.ts). */
export class BodyTooLarge extends ApiError {
  constructor(max: number) {
    super('payload_too_large', `The request body is larger than ${max} bytes.`);
  }
}

/**
 * Bytes of unfinished request bodies held in memory, all requests of one app together:
 * without a bound, thousands of connections each holding a body just under the maximum,
 * never finished, hold gigabytes.
 */
export class PendingBodies {
  #held = 0;
  /** The handlers' way to a body: readJsonBody, bounded by these pending bytes. */
  readJson(req: IncomingMessage, res: ServerResponse, maxBytes: number, maxPending: number): Promise<unknown> {
    return readJsonBody(req, maxBytes, { res, bodies: this, maxPending });
  }
  get held(): number {
    return this.#held;
  }
  /** Counts n more bytes as held; false, and nothing counted, when that would pass `limit`. */
  take(n: number, limit: number): boolean {
    if (this.#held + n > limit) return false;
    this.#held += n;
    return true;
  }
  release(n: number): void {
    this.#held -= n;
  }
}

/** 503 while too many bodies are arriving at once: a client that retries is served later. */
function tooManyPending(): ApiError {
  return new ApiError('service_unavailable', 'Too many request bodies are arriving at once; nothing was added. Retry later.', { 'retry-after': '1' });
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/** True for application/json and application/*+json, with at most charset=utf-8. */
export function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && JSON_TYPE.test(value);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

const CHUNKED = /^[ \t]*chunked[ \t]*$/i;

export interface BodyOptions {
  /** With it, a client that sent "Expect: 100-continue" is told to go on (see readJsonBody). */
  readonly res?: ServerResponse;
  /** The bytes of unfinished bodies of this app, bounded by maxPending in all. */
  readonly bodies?: PendingBodies;
  readonly maxPending?: number;
}

/**
 * Reads and parses a JSON body of at most maxBytes. With `res`, a client that sent "Expect:
 * 100-continue" is told to go on (100 Continue) once the request has passed every check that
 * does not need the body, so that a 413 or 415 (or a 401 or 404 before this) is its answer
 * instead, and the body is never sent (RFC 9110 section 10.1.1). The server hands such
 * requests over without a 100 (it listens to checkContinue).
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number, opts: BodyOptions = {}): Promise<unknown> {
  const { res, bodies, maxPending = Infinity } = opts;
  const type = req.headers['content-type'];
  const length = req.headers['content-length'];
  const coding = req.headers['transfer-encoding'];
  const chunked = coding !== undefined;
  // RFC 9112 section 6.1: a transfer coding the server does not understand is a 501. node:http
  // removes the chunked framing but passes any coding applied before it (gzip, chunked) on as is.
  if (chunked && !CHUNKED.test(coding)) {
    throw new ApiError('not_implemented', `Transfer-Encoding "${coding.slice(0, 60)}" is not supported; only chunked is.`);
  }
  if (type === undefined && !chunked && (length === undefined || length === '0')) {
    throw new ApiError('invalid_request', 'A request body (a JSON object) is required.');
  }
  if (!isJsonContentType(type)) {
    throw new ApiError('unsupported_media_type', `Content-Type must be application/json, got ${type === undefined ? 'none' : `"${type.slice(0, 60)}"`}.`);
  }
  if (length !== undefined && Number(length) > maxBytes) throw new BodyTooLarge(maxBytes);
  if (res !== undefined && req.headers.expect !== undefined && !req.complete) sendContinue(req, res);

  const body = await collect(req, maxBytes, bodies ?? new PendingBodies(), maxPending);
  if (body.length === 0) throw new ApiError('invalid_request', 'A request body (a JSON object) is required.');
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw new ApiError('invalid_request', 'The request body is not valid UTF-8.');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const detail = err instanceof SyntaxError ? err.message : 'too deeply nested';
    throw new ApiError('invalid_request', `The request body is not valid JSON: ${detail.slice(0, 120)}`);
  }
}

// The test node:http applies before it emits checkContinue (lib/_http_server.js).
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** 100 Continue, to an HTTP/1.1 request that asked for it (HTTP/1.0 ignores Expect). */
export function sendContinue(req: IncomingMessage, res: ServerResponse): void {
  if (req.httpVersionMinor >= 1 && CONTINUE.test(req.headers.expect ?? '')) res.writeContinue();
}

/**
 * Reads the body with plain events rather than `for await`: leaving an async iterator early
 * destroys the request and with it the socket, and the 413 would never reach the client.
 * On overflow the stream is left flowing for the caller to drain.
 */
function collect(req: IncomingMessage, maxBytes: number, bodies: PendingBodies, maxPending: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onError);
      bodies.release(size);
      size = 0;
    };
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > maxBytes) {
        done();
        reject(new BodyTooLarge(maxBytes));
        return;
      }
      if (!bodies.take(chunk.length, maxPending)) {
        done();
        reject(tooManyPending());
        return;
      }
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const length = size;
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, length));
    };
    const onError = (): void => {
      done();
      reject(new ApiError('invalid_request', 'The request body was cut short.'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    // A request cut short (its connection closed) may end with 'close' alone.
    req.on('close', onError);
  });
}
