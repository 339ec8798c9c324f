// `petstore keys add|list|revoke` on copies of a config: the added key works with its plan,
// a revoked one gets 401 after SIGHUP, and a refused change leaves the file byte for byte.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, ROOT, call, runBundle, startBundle, tempDir, testConfig, writeConfig, KEYS } from '../support/bundle.js';
import { UNTIL_MS, until } from '../support/wait.js';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A copy of the repository's demo config in a fresh directory. */
function demoCopy(): { dir: string; file: string } {
  const dir = tempDir();
  const file = join(dir, 'petstore.config.json');
  copyFileSync(join(ROOT, 'petstore.config.json'), file);
  return { dir, file };
}

function keys(args: readonly string[], cwd: string) {
  return runBundle(['keys', ...args], { cwd });
}

describe('keys add and revoke', () => {
  test('an added key works with its plan after start; revoked, it gets 401 after SIGHUP; add then revoke gives the file back byte for byte', async () => {
    const { dir, file } = demoCopy();
    const before = readFileSync(file);
    const added = await keys(['add', '--plan', 'pro', '--name', 'harness', '--config', file], dir);
    assert.equal(added.code, 0, added.stderr);
    const key = added.stdout.trim();
    assert.match(key, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url, alone on stdout');
    assert.equal(added.stdout, `${key}\n`);
    assert.match(added.stderr, /systemctl reload petstore/);
    assert.match(added.stderr, /kill -HUP/);
    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes(key), 'the key itself is not stored');
    assert.ok(text.includes(`{ "sha256": "${sha256(key)}", "plan": "pro", "name": "harness" }`));
    assert.ok(text.startsWith(before.toString('utf8').slice(0, before.indexOf('"ci" }') + 6)), 'everything before the insertion is unchanged');
    assert.ok(text.endsWith(before.toString('utf8').slice(before.indexOf('"ci" }') + 6)), 'and everything after it');

    const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
    try {
      const ok = await call(`${srv.url}/pets`, { key });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-ratelimit-limit'), '300', 'the pro plan');

      const revoked = await keys(['revoke', 'harness', '--config', file], dir);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal(revoked.stdout, '');
      assert.match(revoked.stderr, /systemctl reload petstore/);
      assert.ok(readFileSync(file).equals(before), 'add then revoke: the file as it was');
      assert.equal((await call(`${srv.url}/pets`, { key })).status, 200, 'still valid until the reload');
      srv.proc.kill('SIGHUP');
      await until('the reload', () => srv.stderr().includes('config reloaded'));
      assert.equal((await call(`${srv.url}/pets`, { key })).status, 401);
      assert.equal((await call(`${srv.url}/pets`, { key: 'pro-demo-key' })).status, 200, 'other keys untouched');
    } finally {
      await srv.stop();
    }
  });

  test('--limits sets the key\'s own limits (needed for enterprise); the mode of the file is kept; no temp file is left', async () => {
    const { dir, file } = demoCopy();
    chmodSync(file, 0o640);
    const added = await keys(['add', '--plan', 'enterprise', '--name', 'big', '--limits', '5/100', '--config', file], dir);
    assert.equal(added.code, 0, added.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o640);
    assert.deepEqual(readdirSync(dir), ['petstore.config.json']);
    assert.ok(readFileSync(file, 'utf8').includes('"limits": { "perMinute": 5, "perDay": 100 }'));
    const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
    try {
      const res = await call(`${srv.url}/pets`, { key: added.stdout.trim() });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-limit'), '5');
    } finally {
      await srv.stop();
    }
  });

  test('a compact file, and one without keys, are edited in place too (PETSTORE_CONFIG names the file)', async () => {
    const dir = tempDir();
    const file = writeConfig(dir); // JSON.stringify: no whitespace at all
    const before = readFileSync(file);
    const added = await runBundle(['keys', 'add', '--plan', 'free', '--name', 'compact'], { cwd: tempDir(), env: { PETSTORE_CONFIG: file } });
    assert.equal(added.code, 0, added.stderr);
    assert.equal((await runBundle(['keys', 'revoke', 'compact'], { cwd: dir })).code, 0, 'the ./petstore.config.json of the working directory');
    assert.ok(readFileSync(file).equals(before));

    const bare = join(dir, 'bare.json');
    writeFileSync(bare, '{\n  "port": 8080\n}\n');
    const first = await keys(['add', '--plan', 'free', '--name', 'first', '--config', bare], dir);
    assert.equal(first.code, 0, first.stderr);
    const text = readFileSync(bare, 'utf8');
    assert.equal(text, `{\n  "port": 8080,\n  "keys": [{ "sha256": "${sha256(first.stdout.trim())}", "plan": "free", "name": "first" }]\n}\n`);
  });
});

describe('refused changes leave the file byte for byte', () => {
  const cases: Array<{ name: string; args: string[]; code: number; says: RegExp }> = [
    { name: 'unknown plan', args: ['add', '--plan', 'gold', '--name', 'x'], code: 1, says: /"gold" is not a known plan/ },
    { name: 'duplicate name', args: ['add', '--plan', 'pro', '--name', 'ci'], code: 1, says: /"ci" is already the name of keys\[4\]/ },
    { name: 'enterprise without limits', args: ['add', '--plan', 'enterprise', '--name', 'x'], code: 1, says: /needs its own "limits"/ },
    { name: 'limits beyond the bound', args: ['add', '--plan', 'pro', '--name', 'x', '--limits', '0/10'], code: 1, says: /perMinute must be a positive integer/ },
    { name: 'limits not N/N', args: ['add', '--plan', 'pro', '--name', 'x', '--limits', '10'], code: 2, says: /--limits must be PER_MINUTE\/PER_DAY/ },
    { name: 'no --name', args: ['add', '--plan', 'pro'], code: 2, says: /needs --plan PLAN and --name NAME/ },
    { name: 'unknown flag', args: ['add', '--plan', 'pro', '--name', 'x', '--key', 'mine'], code: 2, says: /Unknown option '--key'/ },
    { name: 'revoke an unknown name', args: ['revoke', 'nobody'], code: 1, says: /no key named "nobody"/ },
    { name: 'unknown command', args: ['rotate'], code: 2, says: /unknown keys command "rotate"/ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const { dir, file } = demoCopy();
      const before = readFileSync(file);
      const r = await keys([...c.args, '--config', file], dir);
      assert.equal(r.code, c.code, r.stderr);
      assert.match(r.stderr, c.says);
      assert.equal(r.stdout, '', 'no key printed');
      assert.ok(readFileSync(file).equals(before));
      assert.deepEqual(readdirSync(dir), ['petstore.config.json']);
    });
  }

  test('a config that is not valid as it is: refused before anything is changed', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, testConfig({ colour: 'blue' }));
    const before = readFileSync(file);
    const r = await keys(['add', '--plan', 'pro', '--name', 'x', '--config', file], dir);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not valid as it is.*\n.*\n.*unknown top-level field "colour"/);
    assert.ok(readFileSync(file).equals(before));
  });

  test('no config file: refused, naming what to give', async () => {
    const r = await keys(['list'], tempDir());
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--config FILE/);
  });
});

test('keys list: names, plans and limits, never a key or a whole digest', async () => {
  const dir = tempDir();
  const file = writeConfig(dir);
  const r = await keys(['list', '--config', file], dir);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0] ?? '', /^NAME\s+PLAN\s+PER_MINUTE\s+PER_DAY\s+GIVEN AS$/);
  assert.match(r.stdout, /^pro-test\s+pro\s+300\s+10000\s+key in clear \([0-9a-f]{8}\.\.\.\)$/m);
  assert.match(r.stdout, /^enterprise-test\s+enterprise\s+100000\s+10000000\s/m);
  for (const key of Object.values(KEYS)) {
    assert.ok(!r.stdout.includes(key) && !r.stderr.includes(key), 'no key');
    assert.ok(!r.stdout.includes(sha256(key)), 'no whole digest');
  }
  assert.doesNotMatch(r.stdout, /[0-9a-f]{64}/);
});

describe('key names print as what they are', () => {
  const names = ['a\nb', '\u0001', '\u001b[2J\u001b[31mEVIL', 'x\u202ey', 'x\u0085y', 'x\u2066y'];
  for (const name of names) {
    test(`keys add --name ${JSON.stringify(name)}: refused, exit 1, nothing printed raw, the file unchanged`, async () => {
      const { dir, file } = demoCopy();
      const before = readFileSync(file);
      const r = await keys(['add', '--plan', 'pro', '--name', name, '--config', file], dir);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '', 'no key printed');
      assert.match(r.stderr, /--name holds U\+[0-9A-F]{4} at position \d+: names must be printable characters/);
      assert.ok(!r.stderr.includes(name));
      assert.ok(readFileSync(file).equals(before));
      assert.deepEqual(readdirSync(dir), ['petstore.config.json']);
    });
  }

  test('a config file with such a name: the service refuses to start, keys list refuses it, both naming the character', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, testConfig({ keys: [{ key: KEYS.free, plan: 'free', name: 'ok\nfake-row  pro  300' }] }));
    const start = await runBundle(['--memory', '--port', '0', '--config', file], { cwd: dir });
    assert.equal(start.code, 1);
    assert.match(start.stderr, /keys\[0\]\.name holds U\+000A at position 3: names must be printable characters/);
    const list = await keys(['list', '--config', file], dir);
    assert.equal(list.code, 1);
    assert.equal(list.stdout, '');
    assert.match(list.stderr, /keys\[0\]\.name holds U\+000A/);
  });

  test('keys list escapes what it prints: a plan named with a terminal escape is shown as \\u001b', async () => {
    const dir = tempDir();
    const plan = '\u001b[2Jgold';
    const file = writeConfig(dir, { plans: { [plan]: { perMinute: 5, perDay: 50 } }, keys: [{ key: KEYS.free, plan, name: 'café ✓' }] });
    const r = await keys(['list', '--config', file], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('\u001b'), 'no raw escape reaches the terminal');
    assert.match(r.stdout, /^café ✓\s+\\u001b\[2Jgold\s+5\s+50\s/m, 'printable names as they are');
  });
});

test('a config starting with a UTF-8 byte order mark: list, add and revoke work as for the service, the mark kept, every other byte too', async () => {
  const dir = tempDir();
  const file = join(dir, 'bom.json');
  const original = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{\n  "keys": [\n    {"key":"a","plan":"free","name":"x"}\n  ]\n}\n')]);
  writeFileSync(file, original);
  const list = await keys(['list', '--config', file], dir);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^x\s+free\s+60\s+1000\s+key in clear/m);
  const added = await keys(['add', '--plan', 'pro', '--name', 'windows', '--config', file], dir);
  assert.equal(added.code, 0, added.stderr);
  const after = readFileSync(file);
  assert.ok(after.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])), 'the mark is kept');
  assert.equal(after.toString('utf8').slice(1),
    `{\n  "keys": [\n    {"key":"a","plan":"free","name":"x"},\n    { "sha256": "${sha256(added.stdout.trim())}", "plan": "pro", "name": "windows" }\n  ]\n}\n`);
  const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
  try {
    assert.equal((await call(`${srv.url}/pets`, { key: added.stdout.trim() })).status, 200, 'the service reads the file keys wrote');
  } finally {
    await srv.stop();
  }
  const revoked = await keys(['revoke', 'windows', '--config', file], dir);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.ok(readFileSync(file).equals(original), 'add then revoke: the file as it was, mark included');
});

test('a config that is not JSON: placed by line and column as a start places it, never quoting the text (it may hold a key)', async () => {
  const dir = tempDir();
  const file = join(dir, 'broken.json');
  writeFileSync(file, '{\n  "keys": [{"key": "secret-key-1", "plan": free}]\n}\n');
  const r = await keys(['list', '--config', file], dir);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /not valid JSON at line 2, column 44: expected a value, found a letter/);
  assert.ok(!r.stderr.includes('secret-key-1'));
});

describe('a config path that is not a regular file is refused at once, and no lock is left', () => {
  /** The keys command, killed if it has not ended within the suite's bound (a read of /dev/zero never ends). */
  function bounded(args: readonly string[], cwd: string): Promise<{ code: number | null; stderr: string; killed: boolean }> {
    const proc = spawn(process.execPath, [BUNDLE, 'keys', ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let killed = false;
    proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { killed = true; proc.kill('SIGKILL'); }, UNTIL_MS);
    return new Promise((resolve) => proc.on('close', (code) => { clearTimeout(timer); resolve({ code, stderr, killed }); }));
  }

  const shapes: Array<{ name: string; make: (dir: string) => string; says: RegExp; lock: (path: string) => string }> = [
    { name: '/dev/zero', make: () => '/dev/zero', says: /\/dev\/zero: not usable as the config file: it is not a regular file but a character device/, lock: () => '/dev/zero.lock' },
    { name: 'a FIFO', make: (dir) => { const p = join(dir, 'fifo.json'); execFileSync('mkfifo', [p]); return p; }, says: /fifo\.json: not usable as the config file: it is not a regular file but a named pipe \(FIFO\)/, lock: (p) => `${p}.lock` },
    { name: 'a symlink to a FIFO', make: (dir) => { const p = join(dir, 'real.fifo'); execFileSync('mkfifo', [p]); symlinkSync(p, join(dir, 'link.json')); return join(dir, 'link.json'); }, says: /real\.fifo: not usable as the config file: it is not a regular file but a named pipe/, lock: (p) => `${p.replace('link.json', 'real.fifo')}.lock` },
    { name: 'a symlink to /dev/zero', make: (dir) => { symlinkSync('/dev/zero', join(dir, 'zero.json')); return join(dir, 'zero.json'); }, says: /\/dev\/zero: not usable as the config file: it is not a regular file but a character device/, lock: () => '/dev/zero.lock' },
    { name: 'a directory', make: (dir) => { mkdirSync(join(dir, 'conf.d')); return join(dir, 'conf.d'); }, says: /conf\.d: not usable as the config file: it is not a regular file but a directory/, lock: (p) => `${p}.lock` },
  ];
  for (const shape of shapes) {
    for (const args of [['add', '--plan', 'pro', '--name', 'x'], ['revoke', 'ci'], ['list']]) {
      test(`${shape.name}: keys ${args[0]}`, async () => {
        const dir = tempDir();
        const path = shape.make(dir);
        const lock = shape.lock(path);
        try {
          const r = await bounded([...args, '--config', path], dir);
          assert.equal(r.killed, false, 'it ended on its own');
          assert.equal(r.code, 1, r.stderr);
          assert.match(r.stderr, shape.says);
          assert.equal(existsSync(lock), false, `no ${lock} left`);
        } finally {
          rmSync(lock, { force: true });
        }
      });
    }
  }
});
