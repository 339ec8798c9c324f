// Shared by the black-box tests: start the built bundle exactly as a user would.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalPetStore, StoredPet } from '../../src/store/index.js';
import { UNTIL_MS } from './wait.js';

export { UNTIL_MS, sleep, until } from './wait.js';

/** The repository root (tests run from build/test/). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BUNDLE = join(ROOT, 'dist', 'petstore.js');

export const KEYS = {
  free: 'free-key-0123',
  pro: 'pro-key-0123',
  business: 'business-key-0123',
  enterprise: 'enterprise-key-0123',
} as const;

/** A config like the demo one, with test keys; `extra` overrides top-level fields. */
export function testConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    plans: { free: { perMinute: 60, perDay: 1000 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } },
    keys: [
      { key: KEYS.free, plan: 'free', name: 'free-test' },
      { key: KEYS.pro, plan: 'pro', name: 'pro-test' },
      { key: KEYS.business, plan: 'business', name: 'business-test' },
      { key: KEYS.enterprise, plan: 'enterprise', name: 'enterprise-test', limits: { perMinute: 100000, perDay: 10000000 } },
    ],
    anonymous: { perMinute: 1000, perDay: 100000 },
    ...extra,
  };
}

const madeDirs = new Set<string>();

/**
 * A fresh directory, removed with everything in it when the test file's process exits (node
 * --test runs each file in a process of its own), whether its tests passed or failed.
 */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'));
  if (madeDirs.size === 0) process.once('exit', removeTempDirs);
  madeDirs.add(dir);
  return dir;
}

/** Removes every directory tempDir() made; a directory that cannot be removed is a failure. */
export function removeTempDirs(): void {
  for (const dir of madeDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      process.stderr.write(`test cleanup failed: cannot remove ${dir}: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
    madeDirs.delete(dir);
  }
}

export function writeConfig(dir: string, config: Record<string, unknown> = testConfig()): string {
  const file = join(dir, 'petstore.config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

export interface Running {
  readonly url: string;
  readonly proc: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves when the process exits. */
  readonly exited: Promise<number | null>;
}

/** Spawn `node dist/petstore.js ARGS --port 0` and wait for the ready line. */
export function startBundle(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Running> {
  const proc = spawn(process.execPath, [BUNDLE, '--port', '0', '--log-level', 'warn', ...args], {
    cwd: opts.cwd ?? tempDir(),
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // The bound of until(): only how long a broken start takes to fail (a start on two cores
    // shared by four test files and their servers took more than 10 s).
    // A start that never gets ready is killed: left running, it would keep the test file's
    // process alive after the failure (a hang instead of a failure).
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`no ready line in ${UNTIL_MS / 1000} s; stderr: ${err}`));
    }, UNTIL_MS);
    proc.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
    // Decoded as a stream: a character cut between two reads is not lost.
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (d: string) => {
      out += d;
      const m = /^petstore listening on (http:\/\/\S+\/v1)$/m.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          proc,
          stdout: () => out,
          stderr: () => err,
          exited,
          stop(signal = 'SIGTERM') {
            proc.kill(signal);
            return exited;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready; stderr: ${err}`));
    });
  });
}

/**
 * Run the bundle to completion (for failures at start, --help, ...). One that has not exited
 * within `timeoutMs` (default 120 s: some wait on locks) is killed and fails the test: a start
 * that succeeds where it should fail would otherwise listen forever.
 */
export function runBundle(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [BUNDLE, ...args], {
    cwd: opts.cwd ?? tempDir(),
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const ms = opts.timeoutMs ?? 4 * UNTIL_MS;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`petstore ${args.join(' ')} did not exit within ${ms / 1000} s; stdout: ${stdout.slice(-2000)}; stderr: ${stderr.slice(-2000)}`));
    }, ms);
    // 'close', not 'exit': the output may still be in the pipes when the process has exited.
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Res {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: unknown;
}

/** fetch, with the body read and parsed. */
export async function call(url: string, init: RequestInit & { key?: string } = {}): Promise<Res> {
  const headers = new Headers(init.headers);
  if (init.key !== undefined) headers.set('authorization', `Bearer ${init.key}`);
  const res = await fetch(url, { ...init, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: jsonOf(text) };
}

/** The body as JSON, or undefined (the assertions on the text will say what came back). */
function jsonOf(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Like call(), on a connection of its own (closed after the answer), bounded by `timeoutMs`
 * (default 30 s). For tests whose clients pause (a server stopped or started, a psql between
 * two requests): a kept-alive connection reused after such a pause races the server's
 * keep-alive timeout (5 s), a race a busy machine loses now and then ("other side closed").
 */
export function fresh(url: string, init: { method?: string; key?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'close', ...init.headers };
    if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`;
    const ms = init.timeoutMs ?? UNTIL_MS;
    const req = request(url, { method: init.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('error', reject);
      res.on('end', () => {
        const h = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) h.append(name, v);
        }
        resolve({ status: res.statusCode ?? 0, headers: h, text, json: jsonOf(text) });
      });
    });
    req.on('error', reject);
    req.setTimeout(ms, () => req.destroy(new Error(`${init.method ?? 'GET'} ${url}: no answer within ${ms / 1000} s`)));
    req.end(init.body);
  });
}

/** POST a JSON body. */
export function post(url: string, key: string, body: unknown): Promise<Res> {
  return call(url, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Every pet of a store, through its public paging API. */
export function allPets(store: LocalPetStore): StoredPet[] {
  const out: StoredPet[] = [];
  for (;;) {
    const last = out.at(-1);
    const page = store.list(last === undefined ? { limit: 100 } : { limit: 100, afterId: last.pet.id });
    if (page.length === 0) return out;
    out.push(...page);
  }
}

/**
 * The target of a response's `Link: <...>; rel="next"` (RFC 8288), or undefined when there is
 * no Link (the last page). A Link that is not exactly one next link fails.
 */
export function nextUrl(link: string | null): string | undefined {
  if (link === null) return undefined;
  const next = /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
  assert.ok(next, `Link is an RFC 8288 next link: ${link}`);
  return next;
}

/**
 * Follows the next links from `first`, handing each 200 page to `onPage`; returns the number
 * of pages. More than maxPages pages fails, so a loop of links cannot hang a test.
 */
export async function followPages(
  first: string, key: string, onPage: (res: Res) => void | Promise<void>, maxPages = 100_000,
): Promise<number> {
  let url: string | undefined = first;
  let pages = 0;
  while (url !== undefined) {
    const res = await call(url, { key, signal: AbortSignal.timeout(UNTIL_MS) });
    assert.equal(res.status, 200, res.text);
    await onPage(res);
    url = nextUrl(res.headers.get('link'));
    pages++;
    assert.ok(pages <= maxPages, `more than ${maxPages} pages from ${first}`);
  }
  return pages;
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/**
 * One request on a connection of its own (no keep-alive pool: fetch would keep one connection,
 * so one worker), for tests that spread requests over `--workers`.
 */
export function once(url: string, opts: { method?: string; key?: string; body?: unknown } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'close' };
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const req = request(url, { method: opts.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // A connection handed to a worker that was killed meanwhile may never be answered.
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
}
