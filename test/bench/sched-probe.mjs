// Per-request counts that do not move with machine load, for one server: user and system CPU,
// voluntary and involuntary context switches (/proc/<pid>/status), and, with PROBE_STRACE=1,
// syscalls per request (strace -c -f, in a separate run: strace slows the server).
//   cd test/bench && node sched-probe.mjs            # file vs shared (unpinned, backends on CPU 1)
// Settings: PROBE_SECONDS (3), PROBE_OPS (list,get), PROBE_ROUNDS (2), PROBE_STRACE, BENCH_BEFORE.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enginesOf, pinEngines, startPinned, wrk, writeBenchConfig } from './backends-lib.mjs';
import { startPostgres } from '../../build/test/support/postgres.js';
import { startRedis } from '../../build/test/support/redis.js';

const SECONDS = Number(process.env.PROBE_SECONDS ?? 3);
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 2);
const OPS = (process.env.PROBE_OPS ?? 'list,get').split(',');
const PATHS = { list: '/pets?limit=20', get: '/pets/100' };
const dir = mkdtempSync(join(tmpdir(), 'petstore-sched-probe-'));
const config = writeBenchConfig(dir);
const pg = await startPostgres({ settings: { fsync: 'on', synchronous_commit: 'on' } });
const redis = await startRedis();
const CLK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

function sample(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const num = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)[1]);
  return { user: Number(f[11]) / CLK, sys: Number(f[12]) / CLK, vol: num('voluntary_ctxt_switches'), invol: num('nonvoluntary_ctxt_switches') };
}

const shared = ['--store', pg.url, '--limits', redis.url];
const MODES = [
  ['file', '1', ['--data', join(dir, 'pets.json')]],
  ['shared', '0,1', shared],
  ['shared (backends on CPU 1)', '1', shared],
];
if (process.env.BENCH_BEFORE) MODES.push(['shared@before (backends on CPU 1)', '1', shared, process.env.BENCH_BEFORE]);
const rows = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, backends, args, script] of MODES) {
      pinEngines(enginesOf(pg, redis), backends);
      const srv = await startPinned('0', config, args, {}, script);
      if (round === 0) {
        for (let i = 0; i < 200; i++) await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' }, body: '{"name":"seed","categoryId":1,"status":"available"}' });
      }
      for (const op of OPS) {
        wrk('wrk/get.lua', `${srv.url}${PATHS[op]}`, 1);
        const a = sample(srv.proc.pid);
        const r = wrk('wrk/get.lua', `${srv.url}${PATHS[op]}`, SECONDS);
        const b = sample(srv.proc.pid);
        const n = r.requests;
        const row = { mode, op, round, rps: Math.round(n / (r.duration_us / 1e6)), userUs: ((b.user - a.user) / n) * 1e6, sysUs: ((b.sys - a.sys) / n) * 1e6, volPerReq: (b.vol - a.vol) / n, involPerReq: (b.invol - a.invol) / n };
        if (process.env.PROBE_STRACE === '1') {
          const out = join(dir, 'strace.txt');
          const st = spawn('strace', ['-c', '-f', '-o', out, '-p', String(srv.proc.pid)], { stdio: 'ignore' });
          await new Promise((res) => setTimeout(res, 500));
          const r2 = wrk('wrk/get.lua', `${srv.url}${PATHS[op]}`, SECONDS);
          st.kill('SIGINT');
          await new Promise((res) => st.on('exit', res));
          const text = readFileSync(out, 'utf8');
          const calls = {};
          for (const line of text.split('\n')) {
            const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
            if (m) calls[m[2]] = Number(m[1]) / r2.requests;
          }
          row.syscalls = Object.fromEntries(Object.entries(calls).filter(([, v]) => v >= 0.005).map(([k, v]) => [k, Number(v.toFixed(3))]));
        }
        rows.push(row);
        console.log(JSON.stringify(row, (k, v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(3)) : v)));
      }
      srv.proc.kill('SIGTERM');
      await new Promise((res) => srv.proc.on('exit', res));
    }
  }
} finally {
  await pg.close();
  await redis.close();
  rmSync(dir, { recursive: true, force: true });
}
