#!/usr/bin/env node
// The long version of the reliability suite (the quick one runs in `npm test`):
//
//   node test/reliability/long.mjs [--minutes N] [--only a,b,...] [--seed S] [--no-build]
//
// Sections: crash (100 SIGKILL rounds), fuzz (50,000 bad requests), abuse (100,000 wrong keys,
// 1,000,000 addresses, 20,000 timing samples), slow (1,000 slowloris sockets cut by the
// headers timeout, trickled bodies cut by the request timeout, 5,000 idle keep-alive
// connections, never-reading pipeliners), disk (repeated full / read-only / deleted cycles,
// where the sandbox allows) and soak (N minutes, default 3, of mixed load: RSS and median
// latency at the end within 10 % of the first minute, no file descriptor leaked).
//
// It builds the bundle and the test helpers first (node build.mjs --tests) unless --no-build,
// prints progress, then a table of every check, and exits 1 if any check FAILs. A check that
// fails only through a known bug outside the tested files is KNOWN, with the bug named.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3' },
    only: { type: 'string' },
    seed: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('usage: node test/reliability/long.mjs [--minutes N] [--only crash,fuzz,abuse,slow,disk,soak] [--seed S] [--no-build]');
  process.exit(0);
}
const minutes = Number(values.minutes);
if (!(Number.isInteger(minutes) && minutes >= 1)) {
  console.error('--minutes must be a whole number of minutes >= 1');
  process.exit(2);
}
const ALL = ['crash', 'fuzz', 'abuse', 'slow', 'disk', 'soak'];
const only = values.only ? values.only.split(',') : ALL;
for (const s of only) {
  if (!ALL.includes(s)) {
    console.error(`unknown section ${s} (sections: ${ALL.join(', ')})`);
    process.exit(2);
  }
}
const seed = values.seed !== undefined ? Number(values.seed) >>> 0 : (Date.now() ^ (process.pid << 16)) >>> 0;

if (!values['no-build']) {
  const built = spawnSync(process.execPath, ['build.mjs', '--tests'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const load = (path) => import(pathToFileURL(join(ROOT, 'build', 'test', path)).href);
const helpers = await load('support/bundle.js');
const lib = await load('support/wire.js');
const { runCrashLoop } = await load('reliability/crash.js');
const { fuzzBundle } = await load('reliability/fuzz.js');
const abuse = await load('reliability/abuse.js');
const slow = await load('reliability/slow.js');
const disk = await load('reliability/disk.js');
const { runSoak } = await load('reliability/soak.js');

const KEY = helpers.KEYS.enterprise;
const started = performance.now();
const rows = [];
const stamp = () => `[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s]`;
const log = (line) => console.log(`${stamp()} ${line}`);
const MiB = (kib) => `${(kib / 1024).toFixed(1)} MiB`;

/** One row of the final table. status: PASS, FAIL, KNOWN (fails only by a known bug elsewhere), SKIP. */
function row(check, cases, status, figures) {
  rows.push({ check, cases, status, figures });
  log(`${status.padEnd(5)} ${check} (${cases}): ${figures}`);
}

async function guarded(check, cases, fn) {
  try {
    await fn();
  } catch (err) {
    row(check, cases, 'FAIL', String(err?.stack ?? err).split('\n').slice(0, 6).join(' | '));
  }
}

function judge(check, cases, ok, figures, known) {
  row(check, cases, ok ? 'PASS' : known ? 'KNOWN' : 'FAIL', known && !ok ? `${figures} -- ${known}` : figures);
}

async function startServer(config, extra = []) {
  const dir = helpers.tempDir();
  const srv = await helpers.startBundle(['--config', helpers.writeConfig(dir, helpers.testConfig(config)), '--memory', ...extra], { cwd: dir });
  return { srv, dir, port: lib.portOf(srv.url), pid: srv.proc.pid };
}

async function kill(srv) {
  srv.proc.kill('SIGKILL');
  await srv.exited;
}

log(`seed ${seed}; sections ${only.join(', ')}; soak ${minutes} min`);

// ---------------------------------------------------------------- crash loop
if (only.includes('crash')) {
  await guarded('crash loop: SIGKILL under concurrent creates and lists', '100 rounds', async () => {
    const dir = helpers.tempDir();
    const t0 = performance.now();
    const stats = await runCrashLoop({
      rounds: 100, rng: lib.makeRng(seed), dir, config: helpers.writeConfig(dir), key: KEY,
      creators: 16, listers: 4, killAfterMs: [10, 800], gracefulEvery: 10,
      log: (line) => { if (/^round \d*0:/.test(line)) log(`crash ${line}`); },
    });
    judge('crash loop: SIGKILL under concurrent creates and lists', `${stats.rounds} rounds`, stats.kills >= 80 && stats.acknowledged > 0,
      `${stats.kills} kills, ${stats.acknowledged} acknowledged of ${stats.attempted} sent, ${stats.listsChecked} lists checked, ` +
      `${stats.unacknowledgedButKept} unacknowledged-but-durable kept, none lost, none invented; ${stats.limiterStateLoads} limiter state loads; ` +
      `${stats.keyedRetried} keyed creates retried after a kill, each stored once (${stats.keyedReplayedAfterKill} replayed); ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s`);
  });
}

// ---------------------------------------------------------------- fuzz
if (only.includes('fuzz')) {
  await guarded('fuzz: bad requests over raw sockets', '50,000', async () => {
    const f = await fuzzBundle(50_000, seed);
    const s = f.stats;
    judge('fuzz: bad requests over raw sockets', `${s.cases.toLocaleString('en')} cases`, f.problems.length === 0,
      `${s.responses} answers ${JSON.stringify(s.byStatus)}, ${s.closedWithoutAnswer} closed without answer, ${s.created} created; ` +
      `${f.problems.length} problems${f.problems.length ? `: ${f.problems.slice(0, 3).join(' || ')}` : ''}; ${(s.millis / 1000).toFixed(0)} s`);
    for (const [issue, seen] of f.known) row('fuzz: known issue', `${seen.length} cases`, 'KNOWN', `${issue}; e.g. ${seen[0]?.split('\n')[0]}`);
  });
}

// ---------------------------------------------------------------- abuse
if (only.includes('abuse')) {
  const ANON = { perMinute: 30, perDay: 500 };
  const BAN = { after: 20, seconds: 300 };
  await guarded('key guessing from one address', '100,000 wrong keys', async () => {
    const { srv, port, pid } = await startServer({ anonymous: ANON, ban: BAN });
    try {
      const r = await abuse.keyGuessing({ port, pid, rng: lib.makeRng(seed), total: 100_000, validKey: helpers.KEYS.free });
      const ok = r.unauthorizedBeforeFirst429 === ANON.perMinute && r.unauthorizedTotal === ANON.perMinute &&
        r.sequence.startsWith(`401x30 rate_limitedx21 temporarily_bannedx`) && r.validKeyStatus === 200;
      judge('key guessing from one address', '100,000 wrong keys', ok,
        `${r.unauthorizedBeforeFirst429} 401s before the first 429 (budget ${ANON.perMinute}), ${r.unauthorizedTotal} in all, then ${r.rateLimited} rate_limited, ` +
        `${r.banned} temporarily_banned; banned after ${r.msToBan.toFixed(0)} ms; valid key meanwhile ${r.validKeyStatus}; RSS ${MiB(r.rssBeforeKiB)} -> ${MiB(r.rssAfterKiB)}; ` +
        `${(r.total / (r.millis / 1000)).toFixed(0)} req/s`);
    } finally {
      await kill(srv);
    }
  });
  await guarded('address flood (trustProxy, table 10,000)', '1,000,000 addresses', async () => {
    const tableSize = 10_000;
    const { srv, port, pid } = await startServer({ anonymous: ANON, ban: BAN, trustProxy: true, anonymousTableSize: tableSize });
    try {
      const probe = '10.255.255.1';
      const spent = await abuse.probeAddress(port, probe, ANON.perMinute + 1);
      const f = await abuse.addressFlood({ port, pid, count: 1_000_000, warmup: tableSize, sampleEvery: 100_000 });
      const evicted = (await abuse.probeAddress(port, probe, 1))[0];
      const peak = Math.max(...f.rssSamplesKiB);
      const after100k = f.rssSamplesKiB[0];
      const ok = spent.at(-1) === 'rate_limited' && evicted === '401' && f.byOutcome['401'] === 1_000_000 + tableSize &&
        peak - f.rssAfterWarmupKiB < 64 * 1024;
      judge('address flood (trustProxy, table 10,000)', '1,000,000 addresses', ok,
        `all answered 401 (own budget each): ${JSON.stringify(f.byOutcome)}; RSS after warm-up ${MiB(f.rssAfterWarmupKiB)}, after 100k ${MiB(after100k)}, ` +
        `peak ${MiB(peak)}, end ${MiB(f.rssAfterKiB)} (a table of 1M addresses adds ~280 MiB); spent probe address evicted: ${evicted === '401'}; ` +
        `${(1_000_000 / (f.millis / 1000)).toFixed(0)} req/s`);
    } finally {
      await kill(srv);
    }
  });
  await guarded('wrong-key timing (0 vs all-but-one characters shared)', '20,000 samples each', async () => {
    const { srv, port } = await startServer({ anonymous: { perMinute: 100_000_000, perDay: 1_000_000_000 } });
    try {
      const r = await abuse.keyTiming({ port, validKey: KEY, samples: 20_000 });
      const ok = r.differenceUs < Math.max(50, 0.15 * Math.min(r.medianFarUs, r.medianNearUs));
      judge('wrong-key timing (0 vs all-but-one characters shared)', '20,000 samples each', ok,
        `median ${r.medianFarUs.toFixed(1)} µs vs ${r.medianNearUs.toFixed(1)} µs: difference ${r.differenceUs.toFixed(2)} µs (${(r.relative * 100).toFixed(2)} %)`);
    } finally {
      await kill(srv);
    }
  });
}

// ---------------------------------------------------------------- slow clients
if (only.includes('slow')) {
  const CHECK_INTERVAL = 'src/server/node-server.ts does not set connectionsCheckingInterval: node checks the headers/request timeouts only every 30 s';
  const cutTimes = async (crowd, waitMs) => {
    const closes = await Promise.all(crowd.held.map((h) => Promise.race([h.closed, lib.sleep(waitMs).then(() => undefined)])));
    const done = closes.filter(Boolean);
    const with408 = done.filter((c) => c.responses[0]?.status === 408 && lib.errorBodyProblem(c.responses[0]) === undefined).length;
    const ms = done.map((c) => c.ms);
    return { cut: done.length, with408, min: Math.min(...ms), max: Math.max(...ms) };
  };
  const servedFigures = (l) => `others: ${JSON.stringify(l.statuses)} median ${l.medianMs.toFixed(1)} ms max ${l.maxMs.toFixed(0)} ms`;
  const servedOk = (l) => l.statuses['200'] === l.count && l.medianMs < 100 && l.maxMs < 2000;
  await Promise.all([
    guarded('slowloris', '1,000 sockets', async () => {
      const { srv, port, pid } = await startServer({});
      try {
        const rss0 = lib.rssKiB(pid);
        const crowd = await slow.slowloris(port, 1000, 1000);
        await lib.sleep(2000);
        const served = await slow.probeLatency(srv.url, KEY, 200);
        const fresh = await slow.probeLatency(srv.url, KEY, 50, true);
        const rss1 = lib.rssKiB(pid);
        const t = await cutTimes(crowd, 45_000);
        crowd.stop();
        judge('slowloris: others served meanwhile', '1,000 sockets', servedOk(served) && servedOk(fresh) && rss1 - rss0 < 64 * 1024,
          `${servedFigures(served)}; fresh connections ${servedFigures(fresh)}; RSS ${MiB(rss0)} -> ${MiB(rss1)}`);
        judge('slowloris: cut by the 10 s headers timeout', '1,000 sockets', t.cut === 1000 && t.with408 === 1000 && t.max < 12_500,
          `${t.cut} cut (${t.with408} with a 408 Error body) after ${(t.min / 1000).toFixed(1)}..${(t.max / 1000).toFixed(1)} s`, CHECK_INTERVAL);
      } finally {
        await kill(srv);
      }
    }),
    guarded('bodies trickled forever', '100 sockets', async () => {
      const { srv, port, pid } = await startServer({});
      try {
        const rss0 = lib.rssKiB(pid);
        const crowd = await slow.trickledBodies(port, 100, KEY, 60_000, 500);
        await lib.sleep(2000);
        const served = await slow.probeLatency(srv.url, KEY, 200);
        const rss1 = lib.rssKiB(pid);
        const t = await cutTimes(crowd, 65_000);
        crowd.stop();
        judge('trickled bodies: others served meanwhile', '100 sockets', servedOk(served) && rss1 - rss0 < 64 * 1024,
          `${servedFigures(served)}; RSS ${MiB(rss0)} -> ${MiB(rss1)}`);
        judge('trickled bodies: cut by the 30 s request timeout', '100 sockets', t.cut === 100 && t.with408 === 100 && t.max < 32_500,
          `${t.cut} cut (${t.with408} with a 408 Error body) after ${(t.min / 1000).toFixed(1)}..${(t.max / 1000).toFixed(1)} s`, CHECK_INTERVAL);
      } finally {
        await kill(srv);
      }
    }),
    guarded('idle keep-alive connections', '5,000', async () => {
      const { srv, port, pid } = await startServer({});
      try {
        const rss0 = lib.rssKiB(pid);
        const fd0 = lib.fdCount(pid);
        const crowd = await slow.idleKeepAlive(port, 5000, KEY);
        const opened = performance.now();
        const fdOpen = lib.fdCount(pid);
        const served = await slow.probeLatency(srv.url, KEY, 200);
        const rss1 = lib.rssKiB(pid);
        while (crowd.closedByServer() < 5000 && performance.now() - opened < 15_000) await lib.sleep(250);
        const closedAfter = performance.now() - opened;
        await lib.sleep(500);
        const fd1 = lib.fdCount(pid);
        crowd.stop();
        judge('idle keep-alive connections', '5,000', servedOk(served) && crowd.closedByServer() === 5000 && fd1 <= fd0 + 2 && rss1 - rss0 < 128 * 1024,
          `${servedFigures(served)}; fds ${fd0} -> ${fdOpen} -> ${fd1}; all ${crowd.closedByServer()} closed by the server within ${(closedAfter / 1000).toFixed(1)} s; RSS ${MiB(rss0)} -> ${MiB(rss1)}`);
      } finally {
        await kill(srv);
      }
    }),
    guarded('pipelined 100-pet pages never read', '32 sockets x 10,000', async () => {
      const seedFile = join(helpers.tempDir(), 'seed.json');
      writeFileSync(seedFile, JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ name: `page-pet-${i}-${'n'.repeat(40)}`, categoryId: i, status: 'available' }))));
      const { srv, port, pid } = await startServer({}, ['--seed', seedFile]);
      try {
        const rss0 = lib.rssKiB(pid);
        const fd0 = lib.fdCount(pid);
        const crowd = await slow.nonReaders(port, 32, 10_000, KEY);
        await lib.sleep(3000);
        const rss1 = lib.rssKiB(pid);
        const served = await slow.probeLatency(srv.url, KEY, 200);
        await lib.sleep(3000);
        const rss2 = lib.rssKiB(pid);
        crowd.stop();
        await lib.sleep(1000);
        const fd1 = lib.fdCount(pid);
        judge('pipelined 100-pet pages never read', '32 sockets x 10,000 requests', servedOk(served) && rss2 - rss0 < 96 * 1024 && rss2 - rss1 < 8 * 1024 && fd1 <= fd0 + 2,
          `${servedFigures(served)}; RSS ${MiB(rss0)} -> ${MiB(rss1)} -> ${MiB(rss2)} (2.9 GB of answers if buffered); fds ${fd0} -> ${fd1}`);
      } finally {
        await kill(srv);
      }
    }),
  ]);
}

// ---------------------------------------------------------------- disk
if (only.includes('disk')) {
  const noTmpfs = disk.tmpfsUnsupported();
  const noExt4 = disk.ext4Unsupported();
  const start = (config, data, cwd) => helpers.startBundle(['--config', config, '--data', data], { cwd });
  if (noTmpfs) row('disk full', '-', 'SKIP', noTmpfs);
  else {
    await guarded('disk full', '10 cycles', async () => {
      const fs = disk.Tmpfs.mount('2m');
      const cwd = helpers.tempDir();
      const config = helpers.writeConfig(cwd);
      const data = join(fs.dir, 'data', 'pets.json');
      let srv = await start(config, data, cwd);
      const ledger = new disk.Ledger('full');
      let refusals = 0;
      try {
        for (let cycle = 0; cycle < 10; cycle++) {
          for (let i = 0; i < 50; i++) await ledger.create(srv.url, KEY);
          const filler = fs.fill();
          refusals += await ledger.untilRefused(srv.url, KEY, 1000);
          await ledger.checkReads(srv.url, KEY);
          fs.unfill(filler);
          if ((await ledger.untilAccepted(srv.url, KEY, 20)) === 0) throw new Error(`cycle ${cycle}: no recovery`);
        }
        await kill(srv);
        srv = await start(config, data, cwd);
        await ledger.checkExactly(srv.url, KEY);
        judge('disk full (tmpfs)', '10 fill/free cycles', refusals === 10, `${ledger.acked.size} acknowledged, all kept; ${ledger.refused.length} refused with 503, none stored; recovered every time`);
      } finally {
        await kill(srv);
        fs.unmount();
      }
    });
  }
  if (noExt4) row('read-only file system', '-', 'SKIP', noExt4);
  else {
    await guarded('read-only file system (ext4 error)', '5 cycles', async () => {
      let total = 0;
      let refused = 0;
      for (let cycle = 0; cycle < 5; cycle++) {
        const d = disk.Ext4Disk.create(16);
        const cwd = helpers.tempDir();
        const config = helpers.writeConfig(cwd);
        const data = join(d.dir, 'data', 'pets.json');
        let srv = await start(config, data, cwd);
        try {
          const ledger = new disk.Ledger(`ro${cycle}`);
          for (let i = 0; i < 30; i++) await ledger.create(srv.url, KEY);
          d.sync();
          d.failReadOnly();
          for (let i = 0; i < 5; i++) await ledger.create(srv.url, KEY);
          await ledger.checkReads(srv.url, KEY);
          d.repair();
          if ((await ledger.untilAccepted(srv.url, KEY, 20, 100)) === 0) throw new Error(`cycle ${cycle}: no recovery after repair`);
          await kill(srv);
          srv = await start(config, data, cwd);
          await ledger.checkExactly(srv.url, KEY);
          total += ledger.acked.size;
          refused += ledger.refused.length;
        } finally {
          await kill(srv);
          d.destroy();
        }
      }
      judge('read-only file system (ext4 error)', '5 fail/repair cycles', refused >= 25, `${total} acknowledged, all kept; ${refused} refused with 503, none stored; recovered every time`);
    });
  }
  await guarded('data directory deleted', '10 cycles', async () => {
    const cwd = helpers.tempDir();
    const config = helpers.writeConfig(cwd);
    const dataDir = join(cwd, 'data');
    const data = join(dataDir, 'pets.json');
    let srv = await start(config, data, cwd);
    const ledger = new disk.Ledger('gone');
    try {
      for (let cycle = 0; cycle < 10; cycle++) {
        for (let i = 0; i < 20; i++) await ledger.create(srv.url, KEY);
        rmSync(dataDir, { recursive: true, force: true });
        writeFileSync(dataDir, 'in the way');
        for (let i = 0; i < 3; i++) await ledger.create(srv.url, KEY);
        await ledger.checkReads(srv.url, KEY);
        rmSync(dataDir);
        if ((await ledger.untilAccepted(srv.url, KEY, 10)) === 0) throw new Error(`cycle ${cycle}: no recovery`);
      }
      await kill(srv);
      srv = await start(config, data, cwd);
      await ledger.checkExactly(srv.url, KEY);
      judge('data directory deleted', '10 delete/restore cycles', ledger.refused.length >= 30, `${ledger.acked.size} acknowledged, all kept; ${ledger.refused.length} refused with 503, none stored`);
    } finally {
      await kill(srv);
    }
  });
}

// ---------------------------------------------------------------- soak
if (only.includes('soak')) {
  await guarded(`soak: ${minutes} min of mixed load`, 'mixed', async () => {
    const r = await runSoak({ minutes, rng: lib.makeRng(seed), log });
    const first = r.minutes[0];
    const last = r.minutes.at(-1);
    const rssOk = last.rssKiB <= first.rssKiB * 1.1;
    const latencyOk = last.medianMs <= first.medianMs * 1.1;
    const fdOk = r.fdAfter <= r.fdBefore;
    const ok = rssOk && latencyOk && fdOk && r.unexpected.length === 0 && r.lostAfterRestart === 0 && r.stopExitCode === 0;
    judge(`soak: ${minutes} min of mixed load (list/get/create/401/400)`, `${r.requests.toLocaleString('en')} requests`, ok,
      `${Math.round(r.requests / (minutes * 60))} req/s; RSS minute 1 ${MiB(first.rssKiB)} -> minute ${last.minute} ${MiB(last.rssKiB)} ` +
      `(${(((last.rssKiB / first.rssKiB) - 1) * 100).toFixed(1)} %); median latency ${first.medianMs.toFixed(2)} -> ${last.medianMs.toFixed(2)} ms ` +
      `(${(((last.medianMs / first.medianMs) - 1) * 100).toFixed(1)} %), p99 ${first.p99Ms.toFixed(2)} -> ${last.p99Ms.toFixed(2)} ms; ` +
      `fds before ${r.fdBefore}, peak ${Math.max(...r.minutes.map((m) => m.fds))}, after ${r.fdAfter}; ${r.created} created, ${r.lostAfterRestart} lost after restart; ` +
      `answers ${JSON.stringify(r.byKind)}; unexpected ${r.unexpected.length}${r.unexpected.length ? `: ${r.unexpected.slice(0, 3).join(' || ')}` : ''}`);
  });
}

// ---------------------------------------------------------------- report
console.log('\n| check | cases | result | figures |\n|---|---|---|---|');
for (const r of rows) console.log(`| ${r.check} | ${r.cases} | ${r.status} | ${r.figures.replaceAll('|', '/')} |`);
const failed = rows.filter((r) => r.status === 'FAIL').length;
console.log(`\nseed ${seed}; ${rows.length} checks, ${failed} failed, ${rows.filter((r) => r.status === 'KNOWN').length} known issues; ${((performance.now() - started) / 60_000).toFixed(1)} min`);
process.exit(failed > 0 ? 1 : 0);
