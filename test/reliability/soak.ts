// The soak (long version only): minutes of mixed load (list, get, create, 401, 400) on a
// fixed pool of keep-alive connections, with RSS, file descriptors and latency sampled, then
// a restart that must find every acknowledged pet.
import { Agent } from 'node:http';
import { join } from 'node:path';
import { startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { fdCount, httpRequest, listAll, median, percentile, rssKiB, sleep, type Rng } from '../support/wire.js';

export interface SoakMinute {
  minute: number;
  requests: number;
  medianMs: number;
  p99Ms: number;
  /** Max VmRSS sampled during the minute. */
  rssKiB: number;
  /** Max open fds sampled during the minute. */
  fds: number;
}

export interface SoakResult {
  minutes: SoakMinute[];
  requests: number;
  byKind: Record<string, Record<string, number>>;
  /** Answers that were not what the kind of request calls for. */
  unexpected: string[];
  created: number;
  fdBefore: number;
  fdAfter: number;
  petsAfterRestart: number;
  lostAfterRestart: number;
  stopExitCode: number | null;
}

type Kind = 'list' | 'get' | 'create' | 'unauthorized' | 'invalid';

const EXPECTED: Record<Kind, readonly number[]> = {
  list: [200],
  get: [200, 404],
  create: [201],
  unauthorized: [401],
  invalid: [400],
};

export async function runSoak(opts: { minutes: number; rng: Rng; connections?: number; createsPerSecond?: number; log?: (line: string) => void }): Promise<SoakResult> {
  const { rng } = opts;
  const log = opts.log ?? (() => undefined);
  const connections = opts.connections ?? 16;
  const createsPerSecond = opts.createsPerSecond ?? 20;
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  // A key (and a keyless budget) that no load from one machine can exhaust: the soak measures
  // the service, not its 429s.
  const key = 'soak-key-0123';
  const base = testConfig({ anonymous: { perMinute: 1_000_000_000, perDay: 1_000_000_000_000 } });
  const config = writeConfig(dir, {
    ...base,
    keys: [...(base.keys as unknown[]), { key, plan: 'enterprise', name: 'soak', limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000_000 } }],
  });
  let srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  const pid = srv.proc.pid ?? 0;
  const acked = new Map<number, string>();
  // A starting population, so lists and gets have something to read.
  for (let i = 0; i < 500; i++) {
    const res = await httpRequest(`${srv.url}/pets`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `soak-seed-${i}`, categoryId: i, status: (['available', 'pending', 'sold'] as const)[i % 3] }),
    });
    acked.set((JSON.parse(res.text) as { id: number }).id, `soak-seed-${i}`);
  }
  await sleep(500);
  const fdBefore = fdCount(pid);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const byKind: Record<string, Record<string, number>> = {};
  const unexpected: string[] = [];
  const minutes: SoakMinute[] = [];
  let current = { latencies: [] as number[], rss: 0, fds: 0 };
  let maxId = 500;
  let createTokens = 0;
  let stop = false;
  const started = performance.now();

  const one = async (): Promise<void> => {
    const r = rng.next();
    let kind: Kind;
    let url: string;
    let init: { method?: string; headers: Record<string, string>; body?: string };
    const auth = { authorization: `Bearer ${key}` };
    if (r < 0.05 && createTokens >= 1) {
      createTokens--;
      kind = 'create';
      url = `${srv.url}/pets`;
      const name = `soak-${rng.int(1e12)}`;
      init = { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name, categoryId: rng.int(1000), status: 'available' }) };
    } else if (r < 0.45) {
      kind = 'list';
      const status = rng.chance(0.3) ? `&status=${rng.pick(['available', 'pending', 'sold'])}` : '';
      const cursor = rng.chance(0.5) ? `&cursor=${rng.int(maxId)}` : '';
      url = `${srv.url}/pets?limit=${rng.range(1, 100)}${status}${cursor}`;
      init = { headers: auth };
    } else if (r < 0.70) {
      kind = 'get';
      url = `${srv.url}/pets/${rng.chance(0.9) ? rng.range(1, maxId) : maxId + 1000 + rng.int(1000)}`;
      init = { headers: auth };
    } else if (r < 0.85) {
      kind = 'unauthorized';
      url = `${srv.url}/pets`;
      init = { headers: { authorization: `Bearer wrong-${rng.int(1e9)}` } };
    } else {
      kind = 'invalid';
      if (rng.chance(0.5)) {
        url = `${srv.url}/pets?limit=${rng.pick(['0', '101', 'abc', '1.5', ''])}`;
        init = { headers: auth };
      } else {
        url = `${srv.url}/pets`;
        init = { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: rng.pick(['{"name":""}', '{"categoryId":1}', '[]', '{"name":"x","categoryId":1.5}', '{']) };
      }
    }
    const res = await httpRequest(url, { ...init, agent, timeoutMs: 10_000 });
    current.latencies.push(res.ms);
    const counts = (byKind[kind] ??= {});
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    if (!EXPECTED[kind].includes(res.status) && unexpected.length < 50) unexpected.push(`${kind} ${init.method ?? 'GET'} ${url}: ${res.status} ${res.text.slice(0, 200)}`);
    if (kind === 'create' && res.status === 201) {
      const pet = JSON.parse(res.text) as { id: number; name: string };
      acked.set(pet.id, pet.name);
      if (pet.id > maxId) maxId = pet.id;
    }
  };

  const workers = Array.from({ length: connections }, async () => {
    while (!stop) {
      try {
        await one();
      } catch (err) {
        if (unexpected.length < 50) unexpected.push(`request failed: ${(err as Error).message}`);
      }
    }
  });
  const sampler = (async () => {
    let lastTick = performance.now();
    while (!stop) {
      await sleep(1000);
      const now = performance.now();
      createTokens = Math.min(createsPerSecond, createTokens + ((now - lastTick) / 1000) * createsPerSecond);
      lastTick = now;
      current.rss = Math.max(current.rss, rssKiB(pid));
      current.fds = Math.max(current.fds, fdCount(pid));
      const minute = Math.floor((now - started) / 60_000);
      if (minute > minutes.length) {
        const m: SoakMinute = {
          minute: minutes.length + 1,
          requests: current.latencies.length,
          medianMs: median(current.latencies),
          p99Ms: percentile(current.latencies, 99),
          rssKiB: current.rss,
          fds: current.fds,
        };
        minutes.push(m);
        log(`soak minute ${m.minute}: ${m.requests} requests (${Math.round(m.requests / 60)}/s), median ${m.medianMs.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms, RSS ${(m.rssKiB / 1024).toFixed(1)} MiB, fds ${m.fds}`);
        current = { latencies: [], rss: 0, fds: 0 };
        if (minutes.length >= opts.minutes) stop = true;
      }
    }
  })();
  await Promise.all([...workers, sampler]);
  agent.destroy();
  await sleep(1000);
  const fdAfter = fdCount(pid);

  const stopExitCode = await srv.stop('SIGTERM');
  srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  const pets = await listAll(srv.url, key);
  const names = new Map(pets.map((p) => [p.id, p.name]));
  let lost = 0;
  for (const [id, name] of acked) if (names.get(id) !== name) lost++;
  await srv.stop('SIGTERM');
  const requests = minutes.reduce((n, m) => n + m.requests, 0);
  return { minutes, requests, byKind, unexpected, created: acked.size - 500, fdBefore, fdAfter, petsAfterRestart: pets.length, lostAfterRestart: lost, stopExitCode };
}
