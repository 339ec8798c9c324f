// A closed stdout (a harness that reads the ready line and closes the pipe, a log collector
// that restarts) must not stop the service: log lines are dropped, requests still served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { BUNDLE, KEYS, call, startBundle, tempDir, writeConfig } from '../support/bundle.js';
import { UNTIL_MS, bound } from '../support/wait.js';
import { httpRequest, isAlive, mapLimit, rssKiB, sleep } from '../support/wire.js';

test('stdout closed after the ready line: the service keeps serving, says so once on stderr, and stops cleanly', async () => {
  const dir = tempDir();
  // --log-level info: every request writes an access log line to the closed pipe.
  const srv = await startBundle(['--config', writeConfig(dir), '--memory', '--log-level', 'info'], { cwd: dir });
  try {
    srv.proc.stdout?.destroy();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await call(`${srv.url}/pets`, { key: KEYS.free })).status);
      await sleep(20);
    }
    assert.deepEqual(statuses, Array<number>(20).fill(200));
    await sleep(200);
    assert.ok(isAlive(srv.proc.pid ?? 0), `the process died; stderr: ${srv.stderr()}`);
    assert.equal(srv.stderr().match(/stdout failed \(EPIPE\)/g)?.length, 1, srv.stderr());
    assert.equal(await srv.stop(), 0, srv.stderr());
  } finally {
    srv.proc.kill('SIGKILL');
  }
});

/**
 * The README's Python harness: stdout is a pipe that nobody reads after the ready line. The
 * kernel's pipe buffer fills after a few hundred access log lines; from then on the log must
 * not hold memory without bound nor the stop.
 */
async function unreadStdout(args: readonly string[], requests: number): Promise<{ rssKiB: number[]; stopped: boolean; code: number | null; stderr: string; firstLine: string; afterDrain: string }> {
  const dir = tempDir();
  const proc = spawn(process.execPath, [BUNDLE, '--port', '0', '--log-level', 'info', '--config', writeConfig(dir), ...args], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  try {
    // Read up to the ready line only, then stop reading: the pipe fills up.
    const firstLine = await new Promise<string>((resolve, reject) => {
      let got = '';
      const onData = (d: Buffer): void => {
        got += d.toString();
        const nl = got.indexOf('\n');
        if (nl === -1) return;
        proc.stdout.off('data', onData);
        proc.stdout.pause();
        resolve(got.slice(0, nl));
      };
      proc.stdout.on('data', onData);
      setTimeout(() => reject(new Error(`no ready line in 20 s: ${stderr}`)), 20_000).unref();
    });
    const url = /^petstore listening on (http:\/\/\S+\/v1)$/.exec(firstLine)?.[1];
    assert.ok(url, `the first stdout line is the ready line: ${firstLine}`);
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const rssKiBs: number[] = [];
    const pid = proc.pid as number;
    const step = requests / 4;
    for (let done = 0; done < requests; done += step) {
      const statuses = await mapLimit(Array.from({ length: step }), 16, async () => (await httpRequest(`${url}/pets?limit=1`, { headers: { authorization: `Bearer ${KEYS.enterprise}` }, agent })).status);
      assert.ok(statuses.every((s) => s === 200), `every request answered: ${statuses.find((s) => s !== 200)}`);
      rssKiBs.push(rssKiB(pid));
    }
    agent.destroy();
    proc.kill('SIGTERM');
    // The stop is bounded by the 10 s grace; 25 s here leaves room for a busy machine.
    const stopped = await Promise.race([exited.then(() => true), bound(25_000).then(() => false)]);
    let afterDrain = '';
    if (!stopped) proc.kill('SIGKILL');
    proc.stdout.on('data', (d: Buffer) => { afterDrain += d.toString(); });
    proc.stdout.resume();
    const code = await exited;
    await sleep(50);
    return { rssKiB: rssKiBs, stopped, code, stderr, firstLine, afterDrain };
  } finally {
    proc.kill('SIGKILL');
  }
}

test('stdout a pipe nobody reads: every request is answered, memory stays bounded, SIGTERM stops within the grace', { timeout: 120_000 }, async () => {
  const r = await unreadStdout([], 8000);
  assert.ok(r.stopped, `SIGTERM did not stop the service within the grace; stderr: ${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  // 2,000 requests fill the pipe; the next 6,000 lines (about 1.5 MB of log) are dropped,
  // not queued: the resident size grows by far less than what they would take queued.
  const growth = (r.rssKiB[3] as number) - (r.rssKiB[0] as number);
  assert.ok(growth < 24 * 1024, `RSS grew by ${growth} KiB from 2,000 to 8,000 requests (${r.rssKiB.join(', ')} KiB)`);
});

test('the dropped lines are counted, and said in a warn line once stdout is read again', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--memory', '--log-level', 'info'], { cwd: dir });
  try {
    srv.proc.stdout?.pause();
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    await mapLimit(Array.from({ length: 6000 }), 16, async () => httpRequest(`${srv.url}/pets?limit=1`, { headers: { authorization: `Bearer ${KEYS.enterprise}` }, agent }));
    agent.destroy();
    srv.proc.stdout?.resume();
    const deadline = Date.now() + UNTIL_MS;
    while (!/"msg":"log lines dropped/.test(srv.stdout()) && Date.now() < deadline) await sleep(50);
    await sleep(200); // a later drain may say more
    const warns = [...srv.stdout().matchAll(/^\{"level":40,[^\n]*"dropped":([0-9]+)[^\n]*"msg":"log lines dropped[^\n]*$/gm)];
    assert.ok(warns.length > 0, `a warn line with the count: ${srv.stdout().slice(-500)}`);
    const dropped = warns.reduce((n, w) => n + Number(w[1]), 0);
    const accessLines = srv.stdout().split('\n').filter((l) => l.includes('"msg":"request completed"')).length;
    assert.ok(dropped > 0);
    assert.equal(accessLines + dropped, 6000, 'every line is written or counted as dropped');
    assert.match(srv.stdout().split('\n')[0] as string, /^petstore listening on /, 'the ready line stays first');
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
});

test('access lines: the ready line first, then every answered request\'s line, all written by the time SIGTERM has stopped the process', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--memory', '--log-level', 'info'], { cwd: dir });
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const ids = await mapLimit(Array.from({ length: 300 }, (_, i) => i), 16, async (i) => {
      const r = await httpRequest(`${srv.url}/pets?limit=${(i % 5) + 1}`, { agent, headers: { authorization: `Bearer ${KEYS.enterprise}`, 'x-request-id': `flush-${i}` } });
      assert.equal(r.status, 200);
      return `flush-${i}`;
    });
    agent.destroy();
    assert.equal(await srv.stop('SIGTERM'), 0, srv.stderr());
    const lines = srv.stdout().split('\n');
    assert.match(lines[0] ?? '', /^petstore listening on http:\/\//);
    assert.equal(lines.at(-1), '', 'ends with a whole line');
    const logged = new Set(lines.slice(1, -1).map((l) => (JSON.parse(l) as { reqId?: string }).reqId));
    for (const id of ids) assert.ok(logged.has(id), `no line for ${id}`);
  } finally {
    srv.proc.kill('SIGKILL');
  }
});
