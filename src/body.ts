// Reading a JSON request body with a hard size bound. The bound is enforced from
// Content-Length before reading anything, and again while streaming (chunked uploads).
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.js';

/** Thrown for 413: the caller must answer, then drain or close (see drainOrClose). */
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

/** Reads a JSON body of at most maxBytes; with `bodies`, while they hold at most maxPending bytes in all. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number, bodies?: PendingBodies, maxPending = Infinity): Promise<unknown> {
  const type = req.headers['content-type'];
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (type === undefined && !chunked && (length === undefined || length === '0')) {
    throw new ApiError('invalid_request', 'A request body (a JSON object) is required.');
  }
  if (!isJsonContentType(type)) {
    throw new ApiError('unsupported_media_type', `Content-Type must be application/json, got ${type === undefined ? 'none' : `"${type.slice(0, 60)}"`}.`);
  }
  if (length !== undefined && Number(length) > maxBytes) throw new BodyTooLarge(maxBytes);

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
