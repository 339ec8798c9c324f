// Files that are not regular files where the service reads one: a named pipe (FIFO), which
// blocked the open forever, and an endless device (a symlink to /dev/zero), which was read
// until memory ran out. At start: refused at once, the file named, exit 1. At SIGHUP: the
// reload is refused, the old config stays, and the next reload works. Also: a config over
// 16 MiB, and a garbage data file whose bytes must not reach the terminal raw.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { renameSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, KEYS, UNTIL_MS, call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { sleep } from '../support/wire.js';

const skip = process.platform === 'win32' ? 'no FIFOs or /dev/zero' : false;

interface Ended {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs the bundle; a run still going after `ms` is killed and fails the test (it hung). */
function runWithin(args: readonly string[], cwd: string, ms = UNTIL_MS): Promise<Ended> {
  const started = performance.now();
  const proc = spawn(process.execPath, [BUNDLE, '--port', '0', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  return new Promise((resolve) => proc.on('close', (code, signal) => {
    clearTimeout(timer);
    assert.equal(signal, null, `still running after ${ms} ms (killed); stdout: ${stdout} stderr: ${stderr}`);
    resolve({ code, stdout, stderr, ms: performance.now() - started });
  }));
}

function fifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

function assertRefused(run: Ended, file: string, what: RegExp): void {
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.stdout, '', 'never a half-started server');
  assert.ok(run.stderr.includes(file), `the message names ${file}: ${run.stderr}`);
  assert.match(run.stderr, what);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
}

describe('a file that is not a regular file is refused at start, naming it', { skip }, () => {
  const cases: Array<{ name: string; make: (dir: string) => { args: string[]; file: string }; what: RegExp }> = [
    {
      name: 'data file: a FIFO',
      make: (dir) => ({ args: ['--data', fifo(join(dir, 'pets.json'))], file: join(dir, 'pets.json') }),
      what: /not a regular file but a named pipe/,
    },
    {
      name: 'data file: a symlink to /dev/zero',
      make: (dir) => {
        symlinkSync('/dev/zero', join(dir, 'pets.json'));
        return { args: ['--data', join(dir, 'pets.json')], file: join(dir, 'pets.json') };
      },
      what: /not a regular file but a character device/,
    },
    {
      name: 'journal: a FIFO',
      make: (dir) => ({ args: ['--data', join(dir, 'pets.json')], file: fifo(join(dir, 'pets.json.journal')) }),
      what: /journal file .*not a regular file but a named pipe/,
    },
    {
      name: 'rotated journal: a symlink to /dev/zero',
      make: (dir) => {
        symlinkSync('/dev/zero', join(dir, 'pets.json.journal.old'));
        return { args: ['--data', join(dir, 'pets.json')], file: join(dir, 'pets.json.journal.old') };
      },
      what: /journal file .*not a regular file but a character device/,
    },
    {
      name: 'limits file: a FIFO',
      make: (dir) => ({ args: ['--data', join(dir, 'pets.json')], file: fifo(join(dir, 'pets.json.limits.json')) }),
      what: /limiter state file .*not a regular file but a named pipe/,
    },
    {
      name: 'limits file: a symlink to /dev/zero',
      make: (dir) => {
        symlinkSync('/dev/zero', join(dir, 'pets.json.limits.json'));
        return { args: ['--data', join(dir, 'pets.json')], file: join(dir, 'pets.json.limits.json') };
      },
      what: /limiter state file .*not a regular file but a character device/,
    },
    {
      name: 'config file: a FIFO',
      make: (dir) => ({ args: ['--memory', '--config', fifo(join(dir, 'config.json'))], file: join(dir, 'config.json') }),
      what: /cannot read the config file: it is not a regular file but a named pipe/,
    },
    {
      name: 'config file: a symlink to /dev/zero',
      make: (dir) => {
        symlinkSync('/dev/zero', join(dir, 'config.json'));
        return { args: ['--memory', '--config', join(dir, 'config.json')], file: join(dir, 'config.json') };
      },
      what: /cannot read the config file: it is not a regular file but a character device/,
    },
    {
      name: 'config file: over 16 MiB',
      make: (dir) => {
        const file = join(dir, 'config.json');
        writeFileSync(file, '{}');
        truncateSync(file, 16 * 1024 * 1024 + 1); // sparse: nothing is written, nothing need be read
        return { args: ['--memory', '--config', file], file };
      },
      what: /cannot read the config file: it is larger than 16 MiB \(16777217 bytes\)/,
    },
  ];
  for (const tc of cases) {
    test(tc.name, async () => {
      const dir = tempDir();
      const { args, file } = tc.make(dir);
      const withConfig = args.includes('--config') ? args : [...args, '--config', writeConfig(dir)];
      assertRefused(await runWithin(withConfig, dir), file, tc.what);
    });
  }

  test('a lock file that is a FIFO does not block the start: it is judged by its heartbeat', async () => {
    const dir = tempDir();
    fifo(join(dir, 'pets.json.lock'));
    const srv = await startBundle(['--config', writeConfig(dir), '--data', join(dir, 'pets.json')], { cwd: dir, env: { PETSTORE_LOCK_STALE_MS: '200' } });
    assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200);
    assert.equal(await srv.stop(), 0);
  });
});

test('a garbage data file: the message escapes its bytes and stays short', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  // Bytes a terminal acts on (ESC sequences, a bell, a carriage return), invalid UTF-8, NUL.
  writeFileSync(data, Buffer.concat([Buffer.from([0xef, 0x1b]), Buffer.from('[2J\x07\r\x00'), Buffer.alloc(4096, 0xff)]));
  const run = await runWithin(['--config', writeConfig(dir), '--data', data], dir);
  assertRefused(run, data, /is not valid JSON/);
  const message = run.stderr.trimEnd();
  assert.doesNotMatch(message, /[\x00-\x1f\x7f-\x9f\ufffd]/, `no raw control or undecodable bytes: ${JSON.stringify(message)}`);
  assert.ok(message.length < 600, `a short message: ${message.length} characters`);
});

describe('SIGHUP with a config that is not a regular file: refused, the old one stays, the next reload works', { skip }, () => {
  const OLD = 'old-key-0001';
  const NEW = 'new-key-0001';
  const configWith = (key: string): string => JSON.stringify(testConfig({ keys: [{ key, plan: 'free' }] }));

  /** Points the symlink `link` at `target` in one rename, as a deploy tool would. */
  function repoint(link: string, target: string): void {
    symlinkSync(target, `${link}.tmp`);
    renameSync(`${link}.tmp`, link);
  }

  /** Waits until stderr holds `count` matches of `pattern` (a reload message spans lines). */
  async function inStderr(read: () => string, pattern: RegExp, count: number): Promise<void> {
    const end = Date.now() + UNTIL_MS;
    while ((read().match(new RegExp(pattern.source, 'g')) ?? []).length < count) {
      assert.ok(Date.now() < end, `waiting for ${count} x ${pattern}: ${JSON.stringify(read())}`);
      await sleep(10);
    }
  }

  test('a FIFO, then a symlink to /dev/zero, then a good file', async () => {
    const dir = tempDir();
    const link = join(dir, 'petstore.config.json');
    writeFileSync(join(dir, 'old.json'), configWith(OLD));
    writeFileSync(join(dir, 'new.json'), configWith(NEW));
    fifo(join(dir, 'config.fifo'));
    symlinkSync(join(dir, 'old.json'), link);
    const srv = await startBundle(['--memory', '--config', link], { cwd: dir });
    try {
      // Served once: the SIGHUP handler is in place (the ready line comes just before it).
      assert.equal((await call(`${srv.url}/pets`, { key: OLD })).status, 200);
      repoint(link, join(dir, 'config.fifo'));
      srv.proc.kill('SIGHUP');
      await inStderr(srv.stderr, /config reload refused, the old config stays in force: [^\n]*petstore\.config\.json[^\n]*\n\s+- cannot read the config file: it is not a regular file but a named pipe/, 1);
      assert.equal((await call(`${srv.url}/pets`, { key: OLD })).status, 200, 'the old config stays');

      repoint(link, '/dev/zero');
      srv.proc.kill('SIGHUP');
      await inStderr(srv.stderr, /config reload refused, the old config stays in force: [^\n]*petstore\.config\.json[^\n]*\n\s+- cannot read the config file: it is not a regular file but a character device/, 1);
      assert.equal((await call(`${srv.url}/pets`, { key: OLD })).status, 200, 'the old config stays');

      // The refused reloads did not wedge the queue: the next one is applied.
      repoint(link, join(dir, 'new.json'));
      srv.proc.kill('SIGHUP');
      await inStderr(srv.stderr, /config reloaded from/, 1);
      assert.equal((await call(`${srv.url}/pets`, { key: NEW })).status, 200, 'the new key works');
      assert.equal((await call(`${srv.url}/pets`, { key: OLD })).status, 401, 'the old key is gone');
    } finally {
      assert.equal(await srv.stop(), 0, `signal ${String(srv.proc.signalCode)}, stderr: ${srv.stderr()}`);
    }
  });
});
