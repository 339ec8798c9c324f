// Overload clients for the black-box tests (test/bundle/fairness.test.ts, unread-flood.test.ts):
// a hostile client with many connections, in a worker thread (its own event loop), and a
// victim that sends one request every 200 ms.
import { Agent, request } from 'node:http';
import { Worker } from 'node:worker_threads';
import { KEYS } from './bundle.js';
import { percentile, sleep } from './wire.js';

// ---------------------------------------------------------------------------------------
// The hostile client: many connections, in a worker thread.

export interface FloodOptions {
  readonly port: number;
  readonly connections: number;
  /** Raw request text, repeated. */
  readonly request: string;
  /** Requests in flight per connection (reading clients); ignored when `read` is false. */
  readonly depth: number;
  /** true: read every answer, sending one more request for each; false: write as fast as the server takes it, never read. */
  readonly read: boolean;
}

export interface FloodCounts {
  answers: number;
  statuses: Record<string, number>;
  errors: number;
}

// Counting status lines is all the parsing the flood needs: it keeps the client cheap, so the
// server is what is measured. As source, for a flood's own thread or process
// (test/bench/flood-redis.mjs uses it too): `readAnswers(s, counts, request)` counts every
// answer read on `s` by status, and sends one more `request` for each.
export const ANSWER_READER_SOURCE = `
const readAnswers = (s, counts, request) => {
  let tail = '';
  s.on('data', (d) => {
    const text = tail + d.toString('latin1');
    let n = 0;
    let last = 0;
    for (let i = text.indexOf('HTTP/1.1 '); i !== -1 && i + 12 <= text.length; i = text.indexOf('HTTP/1.1 ', last)) {
      n++;
      const code = text.slice(i + 9, i + 12);
      counts.statuses[code] = (counts.statuses[code] || 0) + 1;
      last = i + 12;
    }
    tail = text.slice(Math.max(last, text.length - 11));
    counts.answers += n;
    if (n > 0 && !s.destroyed) s.write(request.repeat(n));
  });
};
`;

const FLOOD_SOURCE = `
${ANSWER_READER_SOURCE}
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const { port, connections, request, depth, read } = workerData;
const counts = { answers: 0, statuses: {}, errors: 0 };
const batch = Buffer.from(request.repeat(read ? depth : 64));
const sockets = [];
const flood = (s) => {
  while (!s.destroyed && s.write(batch)) {}
  if (!s.destroyed) s.once('drain', () => flood(s));
};
for (let c = 0; c < connections; c++) {
  const s = net.connect(port, '127.0.0.1');
  sockets.push(s);
  s.on('error', () => { counts.errors++; });
  if (!read) {
    s.pause();
    s.on('connect', () => flood(s));
    continue;
  }
  s.on('connect', () => s.write(batch));
  readAnswers(s, counts, request);
}
parentPort.on('message', (m) => {
  if (m === 'stop') for (const s of sockets) s.destroy();
  parentPort.postMessage(counts);
  if (m === 'stop') parentPort.close();
});
`;

export interface Flood {
  counts(): Promise<FloodCounts>;
  stop(): Promise<FloodCounts>;
}

export function startFlood(options: FloodOptions): Flood {
  const worker = new Worker(FLOOD_SOURCE, { eval: true, workerData: options });
  const ask = (m: string): Promise<FloodCounts> => new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage(m);
  });
  return { counts: () => ask('count'), stop: async () => {
    const counts = await ask('stop');
    await worker.terminate();
    return counts;
  } };
}

// ---------------------------------------------------------------------------------------
// The victim: one request every 200 ms, each on its own (a late answer does not delay the next).

export interface VictimRun {
  readonly sent: number;
  /** Answered (with 200) before the window ended. */
  readonly answered: number;
  /** Of the answered requests, in ms. */
  readonly latencies: number[];
}

export async function victim(url: string, windowMs: number, everyMs = 200): Promise<VictimRun> {
  const agent = new Agent({ keepAlive: true });
  const latencies: number[] = [];
  const end = Date.now() + windowMs;
  let sent = 0;
  let answered = 0;
  const pending: Array<Promise<void>> = [];
  while (Date.now() + everyMs <= end) {
    sent++;
    const started = performance.now();
    pending.push(new Promise<void>((resolve) => {
      const req = request(`${url}/pets?limit=1`, { agent, headers: { authorization: `Bearer ${KEYS.enterprise}` } }, (res) => {
        res.resume();
        // (An answer cut short ends with 'close' and no 'end': not counted, but never waited for.)
        res.on('close', () => resolve());
        res.on('end', () => {
          if (res.statusCode === 200 && Date.now() <= end) {
            answered++;
            latencies.push(performance.now() - started);
          }
          resolve();
        });
      });
      req.on('error', () => resolve());
      req.setTimeout(Math.max(1, end - Date.now()), () => req.destroy());
      req.end();
    }));
    await sleep(everyMs);
  }
  await Promise.all(pending);
  agent.destroy();
  return { sent, answered, latencies };
}

export const figures = (v: VictimRun): string => {
  const p = (q: number): string => (v.latencies.length === 0 ? '-' : percentile(v.latencies, q).toFixed(1));
  return `${v.answered}/${v.sent} answered, latency p50 ${p(50)} ms, p90 ${p(90)} ms, p99 ${p(99)} ms, max ${p(100)} ms`;
};

export const keyless = (path = '/v1/pets'): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
export const keyed = (key: string, path = '/v1/pets'): string => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`;

