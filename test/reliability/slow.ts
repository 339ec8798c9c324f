// Slow and greedy clients: sockets that trickle their headers (slowloris) or their body, hold
// idle keep-alive connections by the thousand, or pipeline requests and never read the
// answers. The service must keep answering everyone else, and its memory stay bounded.
import net from 'node:net';
import { Agent } from 'node:http';
import { ResponseParser, httpRequest, median, type RawResponse } from '../support/wire.js';

export interface Held {
  readonly socket: net.Socket;
  /** Resolves with the first complete response (never, if none comes). */
  readonly answered: Promise<RawResponse>;
  /** Resolves when the server closes the socket: after how long, and what it answered. */
  readonly closed: Promise<{ ms: number; responses: RawResponse[] }>;
}

function hold(port: number, first: string, onConnect?: (socket: net.Socket) => void): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const opened = performance.now();
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    let answer: (r: RawResponse) => void = () => undefined;
    const answered = new Promise<RawResponse>((done) => {
      answer = done;
    });
    socket.on('data', (d: Buffer) => {
      try {
        responses.push(...parser.push(d));
        if (responses[0]) answer(responses[0]);
      } catch {
        // A broken answer shows up as missing responses in the caller's checks.
      }
    });
    const closed = new Promise<{ ms: number; responses: RawResponse[] }>((done) => {
      socket.on('close', () => done({ ms: performance.now() - opened, responses }));
    });
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write(first);
      onConnect?.(socket);
      resolve({ socket, answered, closed });
    });
    socket.once('error', reject);
  });
}

export interface Crowd {
  readonly held: Held[];
  /** Stops trickling and closes every socket still open. */
  stop(): void;
  /** How many the server has closed so far. */
  closedByServer(): number;
}

async function crowd(n: number, open: () => Promise<Held>, trickle?: (s: net.Socket, i: number) => void, intervalMs = 1000): Promise<Crowd> {
  const held: Held[] = [];
  // Open in groups, so the listen backlog is never the thing being measured.
  for (let i = 0; i < n; i += 50) {
    held.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, open))));
  }
  let closed = 0;
  for (const h of held) void h.closed.then(() => closed++);
  const timer = trickle ? setInterval(() => held.forEach((h, i) => {
    if (!h.socket.destroyed) trickle(h.socket, i);
  }), intervalMs) : undefined;
  return {
    held,
    stop() {
      clearInterval(timer);
      for (const h of held) h.socket.destroy();
    },
    closedByServer: () => closed,
  };
}

/** n sockets that send a request line and then one more header line every intervalMs. */
export function slowloris(port: number, n: number, intervalMs = 1000): Promise<Crowd> {
  return crowd(n, () => hold(port, 'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n'), (s, i) => s.write(`X-Slow-${i}: ${Date.now()}\r\n`), intervalMs);
}

/**
 * n sockets that announce a body of `length` bytes (under the 64 KiB maximum, so the upload is
 * accepted) and send one byte every intervalMs.
 */
export function trickledBodies(port: number, n: number, key: string, length = 60_000, intervalMs = 500): Promise<Crowd> {
  const head = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"name":"`;
  return crowd(n, () => hold(port, head), (s) => s.write('x'), intervalMs);
}

/** n keep-alive connections, each after one complete request and answer, then idle. */
export async function idleKeepAlive(port: number, n: number, key: string): Promise<Crowd> {
  const c = await crowd(n, () => hold(port, `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`));
  const statuses = await Promise.all(c.held.map((h) => h.answered.then((r) => r.status)));
  if (statuses.some((s) => s !== 200)) throw new Error(`idle connections were answered ${statuses.filter((s) => s !== 200).join(', ')}`);
  return c;
}

/**
 * n connections, each writing `perSocket` pipelined GETs of 100-pet pages and never reading
 * an answer (the socket is paused, so the kernel buffers fill and stay full).
 */
export async function nonReaders(port: number, n: number, perSocket: number, key: string): Promise<Crowd> {
  const req = `GET /v1/pets?limit=100 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`;
  return crowd(n, () => new Promise<Held>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const opened = performance.now();
    const closed = new Promise<{ ms: number; responses: RawResponse[] }>((done) => socket.on('close', () => done({ ms: performance.now() - opened, responses: [] })));
    socket.on('error', () => undefined);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.pause();
      // Written in slices: the point is the server's side of the buffers, not ours.
      let sent = 0;
      const more = (): void => {
        while (sent < perSocket) {
          const k = Math.min(200, perSocket - sent);
          sent += k;
          if (!socket.write(req.repeat(k))) {
            socket.once('drain', more);
            return;
          }
        }
      };
      more();
      resolve({ socket, answered: new Promise<RawResponse>(() => undefined), closed });
    });
  }));
}

export interface Latency {
  readonly count: number;
  readonly statuses: Record<string, number>;
  readonly medianMs: number;
  readonly maxMs: number;
}

/** `count` sequential GETs of a small page from a well-behaved client (fresh connections if `fresh`). */
export async function probeLatency(url: string, key: string, count: number, fresh = false): Promise<Latency> {
  const agent = new Agent({ keepAlive: !fresh, maxSockets: 1 });
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  try {
    for (let i = 0; i < count; i++) {
      const res = await httpRequest(`${url}/pets?limit=5`, { headers: { authorization: `Bearer ${key}` }, agent, timeoutMs: 10_000 })
        .catch((err: Error) => ({ status: 0, ms: 10_000, text: err.message }));
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      times.push(res.ms);
    }
  } finally {
    agent.destroy();
  }
  return { count, statuses, medianMs: median(times), maxMs: Math.max(...times) };
}
