// Key guessing and address floods: the keyless budget per client address cuts a guesser off
// after exactly `anonymous.perMinute` answers, the address table stays bounded however many
// addresses come, and a wrong key takes as long whether or not it nearly matches.
import { PipelinedConnection, errorCode, header, median, rssKiB, type RawResponse, type Rng } from '../support/wire.js';

export function request(path: string, headers: Record<string, string>): string {
  let text = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [k, v] of Object.entries(headers)) text += `${k}: ${v}\r\n`;
  return `${text}\r\n`;
}

const TOKEN68 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/';

export function randomKey(rng: Rng, length = 24): string {
  let k = '';
  for (let i = 0; i < length; i++) k += TOKEN68[rng.int(TOKEN68.length)];
  return k;
}

function outcome(r: RawResponse): string {
  return r.status === 429 ? (errorCode(r) ?? '429?') : String(r.status);
}

export interface GuessingResult {
  total: number;
  /** 401s before the first 429. */
  unauthorizedBeforeFirst429: number;
  /** 401s over the whole run. */
  unauthorizedTotal: number;
  rateLimited: number;
  banned: number;
  /** The ordered outcomes of the first requests, run-length encoded: "401x30 rate_limitedx21 ...". */
  sequence: string;
  /** ms from the first request until the first temporarily_banned answer. */
  msToBan: number;
  millis: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  /** What a valid key from the same address got meanwhile. */
  validKeyStatus: number;
}

function runLength(items: readonly string[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < items.length) {
    let j = i;
    while (j < items.length && items[j] === items[i]) j++;
    out.push(`${items[i]}x${j - i}`);
    i = j;
  }
  return out.join(' ');
}

/**
 * `total` wrong keys, all distinct, from one address. The first 1,000 go over one connection
 * so their order is known; the rest are spread over `connections` pipelined connections.
 */
export async function keyGuessing(opts: { port: number; pid: number; rng: Rng; total: number; validKey: string; connections?: number }): Promise<GuessingResult> {
  const { port, rng } = opts;
  const ordered = Math.min(1000, opts.total);
  const outcomes: string[] = [];
  const rssBeforeKiB = rssKiB(opts.pid);
  const started = performance.now();
  let msToBan = NaN;
  const tally = (r: RawResponse): void => {
    const o = outcome(r);
    if (o === 'temporarily_banned' && Number.isNaN(msToBan)) msToBan = performance.now() - started;
    outcomes.push(o);
  };
  const first = await PipelinedConnection.open(port);
  await first.flood(ordered, 100, () => request('/v1/pets', { authorization: `Bearer ${randomKey(rng)}` }), tally);
  const sequence = runLength(outcomes);
  const rest = opts.total - ordered;
  const n = opts.connections ?? 4;
  const conns = [first, ...(await Promise.all(Array.from({ length: n - 1 }, () => PipelinedConnection.open(port))))];
  await Promise.all(conns.map((c, i) => {
    const share = Math.floor(rest / n) + (i < rest % n ? 1 : 0);
    return c.flood(share, 200, () => request('/v1/pets', { authorization: `Bearer ${randomKey(rng)}` }), tally);
  }));
  const millis = performance.now() - started;
  const [valid] = await first.send([request('/v1/pets', { authorization: `Bearer ${opts.validKey}` })]);
  for (const c of conns) c.close();
  const firstLimited = outcomes.findIndex((o) => o !== '401');
  return {
    total: outcomes.length,
    unauthorizedBeforeFirst429: firstLimited === -1 ? outcomes.length : firstLimited,
    unauthorizedTotal: outcomes.filter((o) => o === '401').length,
    rateLimited: outcomes.filter((o) => o === 'rate_limited').length,
    banned: outcomes.filter((o) => o === 'temporarily_banned').length,
    sequence,
    msToBan,
    millis,
    rssBeforeKiB,
    rssAfterKiB: rssKiB(opts.pid),
    validKeyStatus: valid?.status ?? 0,
  };
}

/** The i-th address of a flood (never 10.255.255.x, kept for the probes). */
export function floodAddress(i: number): string {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

export interface FloodResult {
  addresses: number;
  /** Outcomes of the flood requests (each from a fresh address: all must be 401). */
  byOutcome: Record<string, number>;
  rssAfterWarmupKiB: number;
  rssAfterKiB: number;
  /** RSS sampled after every `sampleEvery` addresses. */
  rssSamplesKiB: number[];
  millis: number;
}

/**
 * One keyless request from each of `count` distinct addresses (X-Forwarded-For, with
 * trustProxy on), after a warm-up of `warmup` addresses that fills the table.
 */
export async function addressFlood(opts: { port: number; pid: number; count: number; warmup: number; offset?: number; sampleEvery?: number; connections?: number }): Promise<FloodResult> {
  const offset = opts.offset ?? 0;
  const n = opts.connections ?? 4;
  const byOutcome: Record<string, number> = {};
  const tally = (r: RawResponse): void => {
    const o = outcome(r);
    byOutcome[o] = (byOutcome[o] ?? 0) + 1;
  };
  const conns = await Promise.all(Array.from({ length: n }, () => PipelinedConnection.open(opts.port)));
  const run = async (from: number, to: number): Promise<void> => {
    const per = Math.ceil((to - from) / n);
    await Promise.all(conns.map((c, k) => {
      const lo = from + k * per;
      const hi = Math.min(to, lo + per);
      return hi > lo ? c.flood(hi - lo, 200, (i) => request('/v1/pets', { 'x-forwarded-for': `203.0.113.9, ${floodAddress(offset + lo + i)}` }), tally) : undefined;
    }));
  };
  await run(0, opts.warmup);
  const rssAfterWarmupKiB = rssKiB(opts.pid);
  const started = performance.now();
  const samples: number[] = [];
  const step = opts.sampleEvery ?? opts.count;
  for (let done = opts.warmup; done < opts.warmup + opts.count; done += step) {
    await run(done, Math.min(opts.warmup + opts.count, done + step));
    samples.push(rssKiB(opts.pid));
  }
  const millis = performance.now() - started;
  for (const c of conns) c.close();
  return { addresses: opts.count, byOutcome, rssAfterWarmupKiB, rssAfterKiB: rssKiB(opts.pid), rssSamplesKiB: samples, millis };
}

/** What `address` gets for `n` keyless requests, in order. */
export async function probeAddress(port: number, address: string, n: number): Promise<string[]> {
  const c = await PipelinedConnection.open(port);
  try {
    const rs = await c.send(Array.from({ length: n }, () => request('/v1/pets', { 'x-forwarded-for': address })));
    return rs.map(outcome);
  } finally {
    c.close();
  }
}

export interface TimingResult {
  samples: number;
  /** Median round trip (µs) of a wrong key sharing no character with the valid one. */
  medianFarUs: number;
  /** Median round trip (µs) of a wrong key equal to the valid one but for its last character. */
  medianNearUs: number;
  differenceUs: number;
  relative: number;
}

/**
 * Round trips of wrong keys, sequential on one keep-alive connection, interleaved in both
 * orders (far-near, near-far) so that drift and ordering effects cancel out.
 */
export async function keyTiming(opts: { port: number; validKey: string; samples: number }): Promise<TimingResult> {
  const valid = opts.validKey;
  const far = [...valid].map((ch) => (ch === 'Z' ? 'Y' : 'Z')).join('');
  const last = valid.at(-1) === 'Z' ? 'Y' : 'Z';
  const near = valid.slice(0, -1) + last;
  const farReq = request('/v1/pets', { authorization: `Bearer ${far}` });
  const nearReq = request('/v1/pets', { authorization: `Bearer ${near}` });
  const c = await PipelinedConnection.open(opts.port);
  const time = async (req: string): Promise<number> => {
    const t = process.hrtime.bigint();
    const [r] = await c.send([req]);
    const us = Number(process.hrtime.bigint() - t) / 1000;
    if (r?.status !== 401) throw new Error(`a wrong key got ${r?.status}: ${r?.body.toString()}`);
    if (header(r, 'www-authenticate') === undefined) throw new Error('401 without WWW-Authenticate');
    return us;
  };
  // Warm up the JIT and the connection before measuring.
  for (let i = 0; i < 500; i++) await time(i % 2 ? farReq : nearReq);
  const farTimes: number[] = [];
  const nearTimes: number[] = [];
  for (let i = 0; i < opts.samples; i++) {
    if (i % 2 === 0) {
      farTimes.push(await time(farReq));
      nearTimes.push(await time(nearReq));
    } else {
      nearTimes.push(await time(nearReq));
      farTimes.push(await time(farReq));
    }
  }
  c.close();
  const medianFarUs = median(farTimes);
  const medianNearUs = median(nearTimes);
  const differenceUs = Math.abs(medianFarUs - medianNearUs);
  return { samples: opts.samples, medianFarUs, medianNearUs, differenceUs, relative: differenceUs / Math.min(medianFarUs, medianNearUs) };
}
