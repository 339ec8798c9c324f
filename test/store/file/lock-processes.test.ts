// The one-writer lock on a data file, from the outside: real processes of the built bundle,
// real files, real pid namespaces (unshare) and a real full file system (tmpfs). A lock is
// judged by its heartbeat (docs/store.md, "One writer"); PETSTORE_LOCK_STALE_MS makes the
// stale time short here. Cases that need root skip, with the reason, where the sandbox
// cannot unshare or mount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, KEYS, call, post, runBundle, tempDir, writeConfig } from '../../support/bundle.js';
import { Tmpfs, tmpfsUnsupported } from '../../reliability/disk.js';
import { openFileStore, StoreOpenError } from '../../../src/store/index.js';
import { formatHolder, thisProcess } from '../../../src/store/file/lock-holder.js';
import type { Logger } from '../../../src/core/types.js';
import { until } from '../../support/wait.js';

const key = KEYS.enterprise;
const STALE_MS = 1000;
const noTmpfs = tmpfsUnsupported();
const noUnshare = unshareUnsupported();
const quiet: Logger = { log: () => undefined };

function unshareUnsupported(): string | undefined {
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' });
    return undefined;
  } catch (err) {
    return `cannot make a pid namespace here (unshare: ${(err as Error).message.split('\n')[0]})`;
  }
}

interface Proc {
  readonly url: string;
  readonly proc: ChildProcess;
  readonly stderr: () => string;
  /** stdout (the JSON log lines) and stderr. */
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

/**
 * The bundle on port 0 with the short stale time, optionally as the first process of a new
 * pid namespace (a container: it is pid 1 there, as every container's first process).
 * Resolves once it listens; rejects with its stderr if it exits first.
 */
function launch(cwd: string, data: string, opts: { container?: boolean } = {}): Promise<Proc> {
  const node = [process.execPath, BUNDLE, '--port', '0', '--log-level', 'warn', '--config', join(cwd, 'petstore.config.json'), '--data', data];
  const [cmd, ...args] = opts.container ? ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', ...node] : node;
  const proc = spawn(cmd as string, args, {
    cwd,
    env: { ...process.env, PETSTORE_LOCK_STALE_MS: String(STALE_MS) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^petstore listening on (http:\/\/\S+\/v1)$/m.exec(out);
      if (m?.[1]) resolve({ url: m[1], proc, stderr: () => err, output: () => out + err, exited });
    });
    void exited.then((code) => reject(new StartFailed(code, err)));
  });
}

class StartFailed extends Error {
  constructor(readonly code: number | null, readonly stderr: string) {
    super(`exited with ${String(code)} before listening: ${stderr}`);
  }
}

async function refused(start: Promise<Proc>): Promise<StartFailed> {
  try {
    const p = await start;
    p.proc.kill('SIGKILL');
    assert.fail('the second writer started');
  } catch (err) {
    if (!(err instanceof StartFailed)) throw err;
    return err;
  }
}

async function kill(p: Proc | undefined): Promise<void> {
  if (p === undefined || p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  p.proc.kill('SIGKILL');
  await p.exited;
}

async function stop(p: Proc): Promise<number | null> {
  p.proc.kill('SIGTERM');
  return p.exited;
}

async function names(url: string): Promise<string[]> {
  const res = await call(`${url}/pets?limit=100`, { key });
  assert.equal(res.status, 200, res.text);
  return (res.json as Array<{ name: string }>).map((p) => p.name);
}

function setup(): { cwd: string; data: string; lock: string } {
  const cwd = tempDir();
  writeConfig(cwd);
  const data = join(cwd, 'data', 'pets.json');
  return { cwd, data, lock: `${data}.lock` };
}

test('a second process on the same data file is refused, naming the file; the first is undisturbed', async () => {
  const { cwd, data } = setup();
  const first = await launch(cwd, data);
  try {
    assert.equal((await post(`${first.url}/pets`, key, { name: 'a1', categoryId: 1 })).status, 201);
    const second = await refused(launch(cwd, data));
    assert.equal(second.code, 1);
    assert.match(second.stderr, new RegExp(`Data file ${data} is in use by process ${first.proc.pid}`));
    assert.equal((await post(`${first.url}/pets`, key, { name: 'a2', categoryId: 1 })).status, 201);
    assert.deepEqual(await names(first.url), ['a1', 'a2']);
  } finally {
    await kill(first);
  }
});

test('the same data file through a symlinked directory, in one process: the second store is refused', async (t) => {
  const { cwd, data } = setup();
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  mkdirSync(join(cwd, 'data'));
  symlinkSync(join(cwd, 'data'), join(cwd, 'alias'));
  const store = await openFileStore(data, { logger: quiet });
  try {
    await assert.rejects(openFileStore(join(cwd, 'alias', 'pets.json'), { logger: quiet }), (err: unknown) => {
      assert.ok(err instanceof StoreOpenError, String(err));
      assert.match(err.message, /is in use by process \d+ \(this process\)/);
      return true;
    });
  } finally {
    await store.close();
  }
});

test('two containers (separate pid namespaces) on one data volume: the second is refused', { skip: noUnshare }, async () => {
  const { cwd, data, lock } = setup();
  const a = await launch(cwd, data, { container: true });
  try {
    assert.equal(JSON.parse(readFileSync(lock, 'utf8')).pid, 1, 'the first container is pid 1 in its namespace');
    assert.equal((await post(`${a.url}/pets`, key, { name: 'a1', categoryId: 1 })).status, 201);
    const b = await refused(launch(cwd, data, { container: true }));
    assert.match(b.stderr, new RegExp(`Data file ${data} is in use by process 1`));
    assert.equal((await post(`${a.url}/pets`, key, { name: 'a2', categoryId: 1 })).status, 201);
    assert.deepEqual(await names(a.url), ['a1', 'a2']);
  } finally {
    await kill(a);
  }
});

test('a container killed with SIGKILL: the next one takes the data file over once the lock is stale', { skip: noUnshare }, async () => {
  const { cwd, data } = setup();
  const a = await launch(cwd, data, { container: true });
  assert.equal((await post(`${a.url}/pets`, key, { name: 'a1', categoryId: 1 })).status, 201);
  await kill(a);
  const b = await launch(cwd, data, { container: true });
  try {
    await until('a takeover warning', () => /taking over a stale data file lock/.test(b.output()));
    assert.deepEqual(await names(b.url), ['a1']);
    assert.equal((await post(`${b.url}/pets`, key, { name: 'b1', categoryId: 1 })).status, 201);
  } finally {
    await kill(b);
  }
});

test('the lock removed while the service runs: the holder puts it back, and a second process is then refused', async () => {
  const { cwd, data, lock } = setup();
  const a = await launch(cwd, data);
  try {
    const before = statSync(lock).ino;
    rmSync(lock);
    await until('the lock is put back', () => existsSync(lock));
    assert.notEqual(statSync(lock).ino, before);
    await until('a warning', () => /data file lock was removed; it has been taken again/.test(a.output()));
    await refused(launch(cwd, data));
    assert.equal((await post(`${a.url}/pets`, key, { name: 'a1', categoryId: 1 })).status, 201);
  } finally {
    await kill(a);
  }
});

test('the lock removed while its holder is stopped: a second process takes over, the first then answers creates with 503 and stores nothing', async () => {
  const { cwd, data, lock } = setup();
  const a = await launch(cwd, data);
  let b: Proc | undefined;
  try {
    assert.equal((await post(`${a.url}/pets`, key, { name: 'a1', categoryId: 1 })).status, 201);
    a.proc.kill('SIGSTOP');
    rmSync(lock);
    b = await launch(cwd, data);
    a.proc.kill('SIGCONT');
    const late = await post(`${a.url}/pets`, key, { name: 'a2', categoryId: 1 });
    assert.equal(late.status, 503, late.text);
    assert.equal((late.json as { code: string }).code, 'service_unavailable');
    await until('the first logs that its lock was taken', () => /data file lock taken by another process/.test(a.output()));
    assert.equal((await post(`${b.url}/pets`, key, { name: 'b1', categoryId: 1 })).status, 201);
    assert.equal((await post(`${a.url}/pets`, key, { name: 'a3', categoryId: 1 })).status, 503, 'for good');
    assert.deepEqual(await names(b.url), ['a1', 'b1']);
    await stop(a); // leaves the lock: it is not the first's any more
    await stop(b);
    b = await launch(cwd, data);
    assert.deepEqual(await names(b.url), ['a1', 'b1'], 'the 503s stored nothing; the second process\'s pet is kept');
  } finally {
    a.proc.kill('SIGCONT');
    await kill(a);
    await kill(b);
  }
});

test('a lock holding the pid of an unrelated live process, not refreshed (left before a reboot): the start takes it over', async (t) => {
  const { cwd, data, lock } = setup();
  const unrelated = spawn('sleep', ['30']);
  t.after(() => unrelated.kill('SIGKILL'));
  mkdirSync(join(cwd, 'data'));
  for (const content of [`${unrelated.pid}\n`, formatHolder({ ...thisProcess(), boot: 'an-earlier-boot', pid: unrelated.pid ?? 1, token: 'x' })]) {
    writeFileSync(lock, content);
    const hourAgo = new Date(Date.now() - 3600_000);
    utimesSync(lock, hourAgo, hourAgo);
    const a = await launch(cwd, data);
    try {
      await until('a takeover warning', () => /taking over a stale data file lock/.test(a.output()));
      assert.equal((await post(`${a.url}/pets`, key, { name: 'x', categoryId: 1 })).status, 201);
    } finally {
      assert.equal(await stop(a), 0);
    }
  }
});

test('a fresh lock the start cannot judge by pid, whose heartbeat has stopped: taken over after the stale time', async (t) => {
  const { cwd, data, lock } = setup();
  const unrelated = spawn('sleep', ['30']);
  t.after(() => unrelated.kill('SIGKILL'));
  mkdirSync(join(cwd, 'data'));
  // As a container that crashed a moment ago leaves it: pid 1 of another namespace (here a
  // live process's pid, which must not matter), last refreshed just now.
  writeFileSync(lock, formatHolder({ ...thisProcess(), pidns: 'pid:[1]', pid: unrelated.pid ?? 1, token: 'x' }));
  const a = await launch(cwd, data);
  try {
    await until('a takeover warning', () => /taking over a stale data file lock/.test(a.output()) && /"reason":"not refreshed for \d+ ms"/.test(a.output()));
    assert.equal((await post(`${a.url}/pets`, key, { name: 'x', categoryId: 1 })).status, 201);
  } finally {
    await kill(a);
  }
});

test('start on a full disk (1 MiB tmpfs): the lock is taken without free space, reads are served, creates get 503, no temporary file is left', { skip: noTmpfs }, async () => {
  const fs = Tmpfs.mount('1m');
  const cwd = tempDir();
  writeConfig(cwd);
  const dir = join(fs.dir, 'data');
  const data = join(dir, 'pets.json');
  let a: Proc | undefined;
  try {
    a = await launch(cwd, data);
    for (let i = 0; i < 5; i++) assert.equal((await post(`${a.url}/pets`, key, { name: `p${i}`, categoryId: i })).status, 201);
    assert.equal(await stop(a), 0);
    // What an earlier version's failed start on a full disk left behind.
    writeFileSync(`${data}.lock.1234.00000000-0000-0000-0000-000000000000.tmp`, '');
    const filler = fs.fill();
    a = await launch(cwd, data);
    assert.deepEqual(await names(a.url), ['p0', 'p1', 'p2', 'p3', 'p4']);
    // The journal's last page may still take a line or two; then creates are refused.
    const kept = ['p0', 'p1', 'p2', 'p3', 'p4'];
    for (let i = 0; ; i++) {
      assert.ok(i < 100, 'a create is refused once the disk is full');
      const res = await post(`${a.url}/pets`, key, { name: `full${i}`, categoryId: 1 });
      if (res.status === 503) break;
      assert.equal(res.status, 201, res.text);
      kept.push(`full${i}`);
    }
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp') || f.includes('.stale-')), [], 'no temporary lock files');
    assert.equal(readFileSync(`${data}.lock`, 'utf8'), '', 'the lock is an empty file: no room to say who holds it');
    await refused(launch(cwd, data)); // and it still keeps a second writer out, by its heartbeat
    await stop(a);
    fs.unfill(filler);
    a = await launch(cwd, data);
    assert.deepEqual(await names(a.url), kept);
    assert.equal((await post(`${a.url}/pets`, key, { name: 'p5', categoryId: 5 })).status, 201);
  } finally {
    await kill(a);
    fs.unmount();
  }
});

test('PETSTORE_LOCK_STALE_MS out of range: refused with a message naming it', async () => {
  const { cwd, data } = setup();
  const r = await runBundle(['--port', '0', '--data', data], { cwd, env: { PETSTORE_LOCK_STALE_MS: '5' } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /PETSTORE_LOCK_STALE_MS must be a whole number of milliseconds from 100 to 3600000, got "5"/);
});
