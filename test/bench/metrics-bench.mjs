// GET /v1/pets with metrics off and on, in one run: the same bundle twice (one config without
// and one with "metrics": true), rounds interleaved (off, on, on, off, ...) so that the load of
// the machine falls on both alike. Reports the median requests/s and latency of each, and the
// ratio of each pair of rounds (median): a busy machine moves both rounds of a pair alike.
// Throughput on a shared machine swings with the other load; the server's own CPU time per
// request (utime + stime from /proc/PID/stat, over each round) swings much less. First,
// the cost of one recording, timed in process. Needs wrk (apt-get install -y wrk); builds
// nothing: run `node build.mjs --tests` first.
//
//   node test/bench/metrics-bench.mjs          BENCH_SECONDS (3), BENCH_ROUNDS (10), BENCH_CONNECTIONS (64)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, CONFIG, KEY, have, http, pinPrefix, startServer } from './lib.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const PETS = 100;

if (!have('wrk')) {
  console.error('wrk is not installed: apt-get install -y wrk');
  process.exit(1);
}

function wrk(url) {
  const argv = [...pinPrefix(1), 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', 'wrk/get.lua', url];
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0], argv.slice(1), { cwd: BENCH_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (c) => (out += c));
    proc.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (code ${code}): ${out}`));
      resolve(JSON.parse(line.slice('BENCH_JSON '.length)));
    });
  });
}

/** CPU seconds (user + system) the process has used, from /proc/PID/stat. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** ns per recorded request (operation, status, duration), timed in this process. */
async function recordCost() {
  const { ServiceMetrics } = await import('../../build/src/metrics/index.js');
  const m = new ServiceMetrics({ operations: ['listPets', 'createPet', 'getPet'], version: 'bench' });
  const ops = ['listPets', 'getPet', undefined, 'createPet'];
  const statuses = [200, 200, 401, 201];
  const n = 5_000_000;
  const times = [];
  for (let rep = 0; rep < 5; rep++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) m.request(ops[i & 3], statuses[i & 3], 0.02 + (i & 7) * 0.01);
    times.push(Number(process.hrtime.bigint() - t0) / n);
  }
  m.close();
  return median(times);
}

console.log(`one recording: ${(await recordCost()).toFixed(1)} ns (median of 5 x 5,000,000)`);
const tmp = mkdtempSync(join(tmpdir(), 'petstore-metrics-bench-'));
const withMetrics = join(tmp, 'metrics.config.json');
writeFileSync(withMetrics, JSON.stringify({ ...JSON.parse(readFileSync(CONFIG, 'utf8')), metrics: true }));
const servers = { off: await startServer('petstore', { config: CONFIG }), on: await startServer('petstore', { config: withMetrics }) };
try {
  for (const s of Object.values(servers)) {
    for (let i = 1; i <= PETS; i++) {
      const r = await http(`${s.url}/pets`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `pet-${i}`, categoryId: i }) });
      if (r.status !== 201) throw new Error(`seeding: ${r.status}`);
    }
    await wrk(`${s.url}/pets?limit=20`); // warm-up
  }
  const metricsUrl = `${servers.on.url.replace(/\/v1$/, '')}/metrics`;
  if ((await http(metricsUrl)).status !== 200) throw new Error('metrics are not on');
  if ((await http(`${servers.off.url.replace(/\/v1$/, '')}/metrics`)).status !== 401) throw new Error('metrics are not off');
  const results = { off: [], on: [] };
  const ratios = [];
  const cpuRatios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    for (const name of order) {
      const cpu0 = cpuSeconds(servers[name].proc.pid);
      const r = await wrk(`${servers[name].url}/pets?limit=20`);
      const cpuUs = ((cpuSeconds(servers[name].proc.pid) - cpu0) * 1e6) / r.requests;
      if (r.non2xx > 0 || r.connect + r.read + r.write + r.timeout > 0) throw new Error(`${name}: errors ${JSON.stringify(r)}`);
      results[name].push({ rps: r.requests / (r.duration_us / 1e6), p50: r.p50_us, p99: r.p99_us, cpuUs });
      console.log(`round ${round + 1} ${name.padEnd(3)} ${Math.round(r.requests / (r.duration_us / 1e6))} req/s  p50 ${r.p50_us} us  p99 ${r.p99_us} us  CPU ${cpuUs.toFixed(2)} us/request`);
    }
    ratios.push((results.on.at(-1)?.rps ?? 0) / (results.off.at(-1)?.rps ?? 1));
    cpuRatios.push((results.on.at(-1)?.cpuUs ?? 0) / (results.off.at(-1)?.cpuUs ?? 1));
  }
  const scraped = (await http(metricsUrl)).text;
  const counted = /petstore_http_requests_total\{operation="listPets",status="200"\} (\d+)/.exec(scraped)?.[1];
  console.log(`\nGET /v1/pets?limit=20, ${CONNECTIONS} connections, ${ROUNDS} rounds x ${SECONDS} s, interleaved (median):`);
  for (const name of ['off', 'on']) {
    const rs = results[name];
    console.log(`  metrics ${name.padEnd(3)}  ${Math.round(median(rs.map((r) => r.rps)))} req/s  p50 ${median(rs.map((r) => r.p50))} us  p99 ${median(rs.map((r) => r.p99))} us  CPU ${median(rs.map((r) => r.cpuUs)).toFixed(2)} us/request`);
  }
  const sorted = [...ratios].sort((a, b) => a - b).map((r) => `${(r * 100).toFixed(1)}`);
  console.log(`  on/off per pair of rounds: median ${(median(ratios) * 100).toFixed(1)} % (all: ${sorted.join(', ')})`);
  const cpuSorted = [...cpuRatios].sort((a, b) => a - b).map((r) => `${(r * 100).toFixed(1)}`);
  console.log(`  CPU per request on/off per pair: median ${(median(cpuRatios) * 100).toFixed(1)} % (all: ${cpuSorted.join(', ')})`);
  console.log(`  listPets 200s counted by the server with metrics: ${counted}`);
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  rmSync(tmp, { recursive: true, force: true });
}
