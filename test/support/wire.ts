// Talking to the built bundle on the wire, shared by the black-box tests (test/bundle/) and the
// long reliability run (test/reliability/long.mjs, which imports the transpiled copy from
// build/test/support/wire.js). Everything talks to the built bundle from the
// outside: raw sockets, HTTP, signals and /proc, never the service's modules.
import net from 'node:net';
import { Agent, request } from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';

// ---------------------------------------------------------------------------------------
// Seeded randomness: a failure prints its seed and reproduces with it.

export interface Rng {
  readonly seed: number;
  /** [0, 1) */
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Buffer;
}

/** mulberry32: small, fast, and good enough to drive a fuzzer. */
export function makeRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    seed,
    next,
    int,
    range: (lo, hi) => lo + int(hi - lo + 1),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => items[int(items.length)] as T,
    bytes(n) {
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = int(256);
      return b;
    },
  };
}

/** The seed from the environment variable `name`, else a fresh one. */
export function seedFrom(name: string): number {
  const given = process.env[name];
  if (given !== undefined && /^[0-9]+$/.test(given)) return Number(given) >>> 0;
  return (Date.now() ^ (process.pid << 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------
// The process under test, seen from /proc.

/** Resident set size of `pid` in KiB (VmRSS of /proc/PID/status). */
export function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m?.[1]) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]);
}

/** Open file descriptors of `pid`. */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function portOf(url: string): number {
  return Number(new URL(url).port);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

// ---------------------------------------------------------------------------------------
// Raw HTTP/1.1 responses, parsed strictly: the suite's claim is that every answer is a
// valid HTTP response, so the parser accepts only what RFC 9112 allows a server to send.

export interface RawResponse {
  readonly version: string;
  readonly status: number;
  readonly reason: string;
  /** Lower-cased names; repeated headers keep every value. */
  readonly headers: ReadonlyMap<string, readonly string[]>;
  readonly body: Buffer;
  /** Parsed as an answer to HEAD (no body). */
  readonly bodyless: boolean;
}

export function header(r: RawResponse, name: string): string | undefined {
  return r.headers.get(name)?.[0];
}

export class ParseError extends Error {}

const STATUS_LINE = /^HTTP\/1\.[01] ([1-5][0-9]{2}) ([\t -~]*)$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;

/**
 * Incremental parser of a server's byte stream into responses. `noBody(headers)` is asked,
 * once for each final response in order, whether it answers a HEAD request (no body then).
 */
export class ResponseParser {
  #buf: Buffer = Buffer.alloc(0);
  readonly #noBody: (headers: ReadonlyMap<string, readonly string[]>) => boolean;

  constructor(noBody: (headers: ReadonlyMap<string, readonly string[]>) => boolean = () => false) {
    this.#noBody = noBody;
  }

  /** Bytes received but not yet part of a complete response. */
  get pending(): number {
    return this.#buf.length;
  }

  push(chunk: Buffer): RawResponse[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: RawResponse[] = [];
    for (;;) {
      const r = this.#one();
      if (r === undefined) break;
      out.push(r);
    }
    return out;
  }

  #one(): RawResponse | undefined {
    const buf = this.#buf;
    const end = buf.indexOf('\r\n\r\n');
    if (end === -1) {
      if (buf.length > 64 * 1024) throw new ParseError(`no end of headers in ${buf.length} bytes`);
      if (buf.length >= 5 && !buf.subarray(0, 5).equals(Buffer.from('HTTP/'))) {
        throw new ParseError(`not an HTTP response: ${JSON.stringify(buf.subarray(0, 40).toString('latin1'))}`);
      }
      return undefined;
    }
    const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
    const m = STATUS_LINE.exec(lines[0] ?? '');
    if (!m) throw new ParseError(`bad status line ${JSON.stringify(lines[0])}`);
    const status = Number(m[1]);
    const headers = new Map<string, string[]>();
    for (const line of lines.slice(1)) {
      const h = HEADER_LINE.exec(line);
      if (!h) throw new ParseError(`bad header line ${JSON.stringify(line)}`);
      const name = (h[1] as string).toLowerCase();
      const list = headers.get(name);
      if (list) list.push(h[2] as string);
      else headers.set(name, [h[2] as string]);
    }
    let pos = end + 4;
    let body: Buffer = Buffer.alloc(0);
    const informational = status < 200;
    const te = headers.get('transfer-encoding');
    const cl = headers.get('content-length');
    if (te && cl) throw new ParseError('both Transfer-Encoding and Content-Length');
    const bodyless = !informational && this.#peekNoBody(headers);
    if (!informational && status !== 204 && status !== 304 && !bodyless) {
      if (te) {
        if (te.join(',').trim().toLowerCase() !== 'chunked') throw new ParseError(`transfer-encoding ${te.join(',')}`);
        const parts: Buffer[] = [];
        for (;;) {
          const lineEnd = buf.indexOf('\r\n', pos);
          if (lineEnd === -1) return undefined;
          const sizeText = buf.subarray(pos, lineEnd).toString('latin1');
          if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new ParseError(`bad chunk size ${JSON.stringify(sizeText)}`);
          const size = parseInt(sizeText, 16);
          if (size === 0) {
            if (buf.length < lineEnd + 4) return undefined;
            if (buf.subarray(lineEnd + 2, lineEnd + 4).toString('latin1') !== '\r\n') throw new ParseError('trailers are not expected');
            pos = lineEnd + 4;
            break;
          }
          if (buf.length < lineEnd + 2 + size + 2) return undefined;
          parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
          pos = lineEnd + 2 + size + 2;
        }
        body = Buffer.concat(parts);
      } else if (cl) {
        if (cl.length !== 1 || !/^[0-9]{1,10}$/.test(cl[0] as string)) throw new ParseError(`bad content-length ${cl.join(',')}`);
        const n = Number(cl[0]);
        if (buf.length < pos + n) return undefined;
        body = buf.subarray(pos, pos + n);
        pos += n;
      } else {
        // Delimited by the close: only complete once the connection ends (see finish()).
        this.#closeDelimited = true;
        return undefined;
      }
    }
    if (!informational) this.#noBodyPeeked = undefined;
    this.#buf = buf.subarray(pos);
    return { version: (lines[0] as string).slice(0, 8), status, reason: m[2] as string, headers, body: Buffer.from(body), bodyless };
  }

  #closeDelimited = false;
  #noBodyPeeked: boolean | undefined;

  /** Asked once per final response, even when its body arrives in several pieces. */
  #peekNoBody(headers: ReadonlyMap<string, readonly string[]>): boolean {
    this.#noBodyPeeked ??= this.#noBody(headers);
    return this.#noBodyPeeked;
  }

  /** At the connection's end: a close-delimited body is complete; other leftovers are errors. */
  finish(): RawResponse[] {
    if (this.#buf.length === 0) return [];
    if (this.#closeDelimited) throw new ParseError('response without Content-Length or chunked framing');
    throw new ParseError(`connection closed inside a response (${this.#buf.length} bytes: ${JSON.stringify(this.#buf.subarray(0, 60).toString('latin1'))})`);
  }
}

export interface ExchangeResult {
  readonly responses: RawResponse[];
  /** A framing problem in what the server sent, if any. */
  readonly parseError: string | undefined;
  /** How the exchange ended. */
  readonly end: 'closed' | 'timeout';
  /** Whether we half-closed because the server kept waiting for more input. */
  readonly halfClosed: boolean;
  readonly socketError: string | undefined;
}

export interface ExchangeOptions {
  /** Half-close after this long without progress (server waiting for more bytes). */
  quietMs?: number;
  /** Give up (destroy) after this long in all. */
  timeoutMs?: number;
  /** For each final response, in order: does it answer a HEAD request? */
  heads?: readonly boolean[];
}

/**
 * Whether a response to a HEAD request comes without a body: those of the service do; the
 * answer to a request node's parser rejected is written raw with its Error body (the server
 * cannot trust the method of a request it could not parse) and then the connection closes.
 */
function headAnswerIsBodyless(headers: ReadonlyMap<string, readonly string[]>): boolean {
  return headers.has('x-request-id') || !headers.get('connection')?.some((v) => v.toLowerCase() === 'close');
}

/**
 * Sends `payload` on a fresh connection and collects every response until the server closes
 * it. If the server goes quiet (it is waiting for bytes that will never come), we half-close,
 * so it sees the end of the input and answers or closes.
 */
export function exchange(port: number, payload: Buffer, opts: ExchangeOptions = {}): Promise<ExchangeResult> {
  const quietMs = opts.quietMs ?? 250;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const heads = opts.heads ?? [];
  let responseIndex = 0;
  const parser = new ResponseParser((h) => heads[responseIndex++] === true && headAnswerIsBodyless(h));
  const responses: RawResponse[] = [];
  let parseError: string | undefined;
  let socketError: string | undefined;
  let halfClosed = false;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let quiet: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(quiet);
      quiet = setTimeout(() => {
        if (!halfClosed && !socket.destroyed) {
          halfClosed = true;
          socket.end();
        }
      }, quietMs);
    };
    const overall = setTimeout(() => finish('timeout'), timeoutMs);
    let done = false;
    const finish = (end: 'closed' | 'timeout'): void => {
      if (done) return;
      done = true;
      clearTimeout(quiet);
      clearTimeout(overall);
      if (parseError === undefined && end === 'closed') {
        try {
          responses.push(...parser.finish());
        } catch (err) {
          parseError = (err as Error).message;
        }
      }
      socket.destroy();
      resolve({ responses, parseError, end, halfClosed, socketError });
    };
    socket.on('data', (chunk: Buffer) => {
      arm();
      if (parseError !== undefined) return;
      try {
        responses.push(...parser.push(chunk));
      } catch (err) {
        parseError = (err as Error).message;
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      socketError = err.code ?? err.message;
    });
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => {
      socket.write(payload, () => arm());
    });
  });
}

// ---------------------------------------------------------------------------------------
// The Error body: the one shape every 4xx (and every 5xx) must have.

/** Undefined when `r` is a well-formed Error response; otherwise what is wrong. */
export function errorBodyProblem(r: RawResponse, isHead = false): string | undefined {
  const type = header(r, 'content-type');
  if (type !== 'application/json; charset=utf-8') return `content-type ${String(type)}`;
  if (isHead) return r.body.length === 0 ? undefined : 'a HEAD response with a body';
  let body: unknown;
  try {
    body = JSON.parse(r.body.toString('utf8'));
  } catch {
    return `body is not JSON: ${JSON.stringify(r.body.subarray(0, 80).toString('latin1'))}`;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body is not an object';
  const keys = Object.keys(body).sort().join(',');
  if (keys !== 'code,message,status') return `body keys ${keys}`;
  const e = body as { code: unknown; message: unknown; status: unknown };
  if (typeof e.code !== 'string' || !/^[a-z]+(?:_[a-z]+)*$/.test(e.code)) return `code ${JSON.stringify(e.code)}`;
  if (typeof e.message !== 'string' || e.message === '') return 'empty message';
  if (e.status !== r.status) return `body status ${String(e.status)} != HTTP status ${r.status}`;
  return undefined;
}

/** The Error body's code, or undefined. */
export function errorCode(r: RawResponse): string | undefined {
  try {
    const body = JSON.parse(r.body.toString('utf8')) as { code?: unknown };
    return typeof body.code === 'string' ? body.code : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// A pipelining client on one keep-alive connection, for floods: requests are written in
// windows and responses read in order.

export class PipelinedConnection {
  readonly #socket: net.Socket;
  readonly #parser = new ResponseParser();
  readonly #waiting: Array<(r: RawResponse) => void> = [];
  #failure: Error | undefined;
  readonly #failed: Array<(err: Error) => void> = [];

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      let list: RawResponse[];
      try {
        list = this.#parser.push(chunk);
      } catch (err) {
        this.#fail(err as Error);
        return;
      }
      for (const r of list) this.#waiting.shift()?.(r);
    });
    socket.on('error', (err) => this.#fail(err));
    socket.on('close', () => this.#fail(new Error('connection closed')));
  }

  static open(port: number): Promise<PipelinedConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new PipelinedConnection(socket));
      });
    });
  }

  #fail(err: Error): void {
    if (this.#failure) return;
    this.#failure = err;
    for (const f of this.#failed.splice(0)) f(err);
  }

  /** Writes every request at once; resolves with their responses, in order. */
  send(requests: readonly string[]): Promise<RawResponse[]> {
    if (this.#failure) return Promise.reject(this.#failure);
    const promises = requests.map((_, i) => new Promise<RawResponse>((resolve, reject) => {
      this.#waiting.push(resolve);
      if (i === 0) this.#failed.push(reject);
    }));
    this.#socket.write(requests.join(''));
    return Promise.all(promises);
  }

  /** Sends `total` requests made by `make(i)`, `window` in flight; calls `each` per response. */
  async flood(total: number, window: number, make: (i: number) => string, each: (r: RawResponse, i: number) => void): Promise<void> {
    for (let start = 0; start < total; start += window) {
      const n = Math.min(window, total - start);
      const batch = Array.from({ length: n }, (_, k) => make(start + k));
      const responses = await this.send(batch);
      responses.forEach((r, k) => each(r, start + k));
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}

// ---------------------------------------------------------------------------------------
// Plain HTTP with a keep-alive pool (node:http rather than fetch: cheaper per request, which
// matters for load generation on a 2-core machine).

export interface HttpResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** Wall time of the exchange in ms. */
  readonly ms: number;
}

export function httpRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent; timeoutMs?: number } = {},
): Promise<HttpResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: opts.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: Buffer.concat(chunks).toString('utf8'),
        ms: performance.now() - started,
      }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`timeout after ${opts.timeoutMs} ms`)));
    req.end(opts.body);
  });
}

export interface PetRecord {
  id: number;
  name: string;
  categoryId: number;
  status?: string;
}

/** Every pet, following the rel="next" links; throws on a non-200 page. */
export async function listAll(base: string, key: string, agent?: Agent): Promise<PetRecord[]> {
  const all: PetRecord[] = [];
  let url: string | undefined = `${base}/pets?limit=100`;
  while (url !== undefined) {
    const res = await httpRequest(url, { headers: { authorization: `Bearer ${key}` }, agent });
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.text}`);
    all.push(...(JSON.parse(res.text) as PetRecord[]));
    const link = res.headers.link;
    url = /<([^>]+)>; rel="next"/.exec(typeof link === 'string' ? link : '')?.[1];
  }
  return all;
}

export function createPet(base: string, key: string, pet: Record<string, unknown>, agent?: Agent): Promise<HttpResult> {
  return httpRequest(`${base}/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(pet),
    agent,
  });
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  });
  await Promise.all(workers);
  return out;
}
