// Embedding, as another project would do it: copy the built bundle (and its declarations)
// into a folder of its own, import it, start instances, talk to them, reset, close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, call, post, tempDir } from '../support/bundle.js';

const project = tempDir();
cpSync(join(ROOT, 'dist'), join(project, 'vendor', 'petstore'), { recursive: true });
writeFileSync(join(project, 'package.json'), '{"type":"module","private":true}');
const bundle = join(project, 'vendor', 'petstore', 'petstore.js');

interface Handle { url: string; port: number; close(): Promise<void>; reset(): Promise<void>; seed(p: unknown[]): Promise<Array<{ id: number }>> }
interface PetstoreModule {
  startPetstore(o: Record<string, unknown>): Promise<Handle>;
  ManualClock: new () => { now(): number; offsetMs: number; advance(ms: number): void };
}

const config = { keys: [{ key: 'embed-key', plan: 'pro', name: 'embedder' }] };

test('importing the bundle starts nothing', () => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(pathToFileURL(bundle).href)}); console.log(Object.keys(m).sort().join(','));`], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /startPetstore/);
  assert.doesNotMatch(r.stdout, /listening/);
});

test('two instances in one process share no state; reset and close', async () => {
  const { startPetstore, ManualClock } = (await import(pathToFileURL(bundle).href)) as PetstoreModule;
  // A stopped clock: no token comes back between requests, however slow the machine.
  const clock = new ManualClock();
  const a = await startPetstore({ port: 0, config, clock });
  const b = await startPetstore({ port: 0, config, clock });
  try {
    assert.match(a.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.notEqual(a.port, b.port);
    assert.equal((await post(`${a.url}/pets`, 'embed-key', { name: 'only-in-a', categoryId: 1 })).status, 201);
    assert.equal(((await call(`${a.url}/pets`, { key: 'embed-key' })).json as unknown[]).length, 1);
    assert.equal(((await call(`${b.url}/pets`, { key: 'embed-key' })).json as unknown[]).length, 0);
    // Limits are per instance too.
    const ra = await call(`${a.url}/pets`, { key: 'embed-key' });
    const rb = await call(`${b.url}/pets`, { key: 'embed-key' });
    assert.equal(Number(ra.headers.get('x-ratelimit-remaining')) + 1, Number(rb.headers.get('x-ratelimit-remaining')));
    const seeded = await a.seed([{ name: 's1', categoryId: 1 }, { name: 's2', categoryId: 2, status: 'sold' }]);
    assert.deepEqual(seeded.map((p) => p.id), [2, 3]);
    await a.reset();
    const after = await call(`${a.url}/pets`, { key: 'embed-key' });
    assert.deepEqual(after.json, []);
    assert.equal(after.headers.get('x-ratelimit-remaining'), '299', 'limits cleared by reset');
    assert.equal(((await post(`${a.url}/pets`, 'embed-key', { name: 'again', categoryId: 1 })).json as { id: number }).id, 1);
  } finally {
    await a.close();
    await b.close();
  }
  await assert.rejects(fetch(`${a.url}/pets`));
});

test('the harness from the handle: one clock with the admin routes (a ManualClock given is it), journal, snapshot and restore', async () => {
  const mod = (await import(pathToFileURL(bundle).href)) as PetstoreModule;
  const clock = new mod.ManualClock();
  const start = clock.now();
  const h = (await mod.startPetstore({
    port: 0, clock,
    config: { plans: { free: { perMinute: 1, perDay: 100 } }, keys: [{ key: 'slow-key', plan: 'free', name: 'slow' }], admin: { key: 'embed-admin-key-0123' } },
  })) as Handle & {
    clock: { now(): number; offsetMs: number; advance(ms: number): void };
    journal(f?: Record<string, unknown>): Promise<{ requests: Array<{ status: number; key: string | null; time: string }>; dropped: number }>;
    snapshot(name: string): Promise<{ name: string; pets: number }>;
    restore(name: string): Promise<void>;
  };
  try {
    assert.equal(h.clock, clock, 'the ManualClock given is the service clock');
    assert.equal((await call(`${h.url}/pets`, { key: 'slow-key' })).status, 200);
    assert.equal((await call(`${h.url}/pets`, { key: 'slow-key' })).status, 429);
    h.clock.advance(60_000);
    assert.equal((await call(`${h.url}/pets`, { key: 'slow-key' })).status, 200, 'refilled by the moved clock');
    const moved = await call(`${h.url.replace(/\/v1$/, '')}/__admin/clock`, { method: 'POST', key: 'embed-admin-key-0123', headers: { 'content-type': 'application/json' }, body: '{"advanceMs":1000}' });
    assert.equal((moved.json as { offsetMs: number }).offsetMs, 61_000);
    assert.equal(clock.offsetMs, 61_000, 'an admin advance moves the embedder\'s clock');
    const page = await h.journal({ key: 'slow' });
    assert.deepEqual(page.requests.map((r) => r.status), [200, 429, 200]);
    assert.equal(page.requests[0]?.time, new Date(start).toISOString());
    await assert.rejects(h.journal({ limit: 0 }), RangeError);
    await h.seed([{ name: 'kept', categoryId: 1 }]);
    assert.deepEqual(await h.snapshot('one'), { name: 'one', pets: 1 });
    await h.reset();
    assert.equal(clock.offsetMs, 0, 'reset: back to the start');
    await h.restore('one');
    assert.equal(clock.offsetMs, 61_000, 'restore: the offset as saved');
    assert.equal((await call(`${h.url}/pets`, { key: 'slow-key' })).status, 429, 'restore: the bucket as saved (empty)');
    h.clock.advance(60_000);
    assert.equal(((await call(`${h.url}/pets`, { key: 'slow-key' })).json as unknown[]).length, 1);
    await assert.rejects(h.restore('none'), /No snapshot named "none"/);
  } finally {
    await h.close();
  }
});

test('start rejects, never hangs, on a bad config or a port in use', async () => {
  const { startPetstore } = (await import(pathToFileURL(bundle).href)) as PetstoreModule;
  await assert.rejects(startPetstore({ port: 0, config: { keys: [{ key: 'k', plan: 'nope' }] } }), /nope/);
  const a = await startPetstore({ port: 0, config });
  try {
    await assert.rejects(startPetstore({ port: a.port, config }), /already in use/);
  } finally {
    await a.close();
  }
});

test('a TypeScript project gets checked types from the declarations', () => {
  writeFileSync(join(project, 'consumer.ts'), `
import { startPetstore, ManualClock, type PetstoreHandle, type StartOptions } from './vendor/petstore/petstore.js';
const options: StartOptions = { port: 0, config: { keys: [] }, clock: new ManualClock(), logger: false };
export async function run(): Promise<string> {
  const h: PetstoreHandle = await startPetstore(options);
  await h.reset();
  await h.close();
  return h.url;
}
`);
  writeFileSync(join(project, 'wrong.ts'), `
import { startPetstore } from './vendor/petstore/petstore.js';
void startPetstore({ port: 'eighty' });
`);
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types')];
  const ok = spawnSync(process.execPath, [tsc, ...flags, join(project, 'consumer.ts')], { encoding: 'utf8', cwd: project });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  const bad = spawnSync(process.execPath, [tsc, ...flags, join(project, 'wrong.ts')], { encoding: 'utf8', cwd: project });
  assert.notEqual(bad.status, 0, 'a wrong option type is a compile error');
  assert.match(bad.stdout, /wrong\.ts\(3,\d+\).*not assignable to type 'number'/);
});
