// The command line as an operator meets it: flags, environment, start failures, signals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { KEYS, call, followPages, post, runBundle, startBundle, tempDir, testConfig, until, writeConfig } from '../support/bundle.js';

test('--help prints usage and exits 0', async () => {
  const r = await runBundle(['--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /Usage: node \S*dist\/petstore\.js \[options\]/, 'names the command as it was run');
  for (const flag of ['--config', '--data', '--memory', '--port', '--host', '--env', '--version']) assert.ok(r.stdout.includes(flag), flag);
});

test('--version prints the package version', async () => {
  const r = await runBundle(['--version']);
  assert.equal(r.code, 0);
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(r.stdout.trim(), pkg.version);
});

test('an unknown flag is a usage error', async () => {
  const r = await runBundle(['--nope']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--nope/);
});

test('bad configs are refused with every problem listed and the file named', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, {
    plans: { free: { perMinute: 0, perDay: 10 } },
    keys: [{ key: 'a', plan: 'gold' }, { key: 'a', plan: 'free' }, { key: 'b', plan: 'enterprise' }],
    colour: 'blue',
  });
  const r = await runBundle(['--config', file, '--memory', '--port', '0']);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(file), r.stderr);
  for (const problem of ['plans.free.perMinute', '"gold"', 'duplicate', 'enterprise', '"colour"']) {
    assert.ok(r.stderr.includes(problem), `${problem} in ${r.stderr}`);
  }
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.equal(r.stdout, '', 'never a half-started server');
});

test('a config file that is not JSON, or missing, is named', async () => {
  const dir = tempDir();
  const file = join(dir, 'broken.json');
  writeFileSync(file, '{ "keys": [');
  let r = await runBundle(['--config', file, '--memory']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /broken\.json.*not valid JSON/s);
  r = await runBundle(['--config', join(dir, 'missing.json'), '--memory']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /missing\.json.*not found/s);
});

test('a corrupt data file stops the start, is named, and is left untouched', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  writeFileSync(data, '{"format":"petstore-snapshot","version":1,"nextId":3,"pets":[{"id":1,');
  const before = readFileSync(data);
  const r = await runBundle(['--config', writeConfig(dir), '--data', data, '--port', '0']);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(data), r.stderr);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.deepEqual(readFileSync(data), before);
});

test('a port in use is named', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const dir = tempDir();
  const r = await runBundle(['--config', writeConfig(dir), '--memory', '--port', String(port)]);
  blocker.close();
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`port ${port}`), r.stderr);
  assert.match(r.stderr, /in use/);
});

test('the ready line is the first stdout line and carries the real URL', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--memory'], { cwd: dir });
  assert.match(srv.stdout().split('\n')[0] ?? '', /^petstore listening on http:\/\/127\.0\.0\.1:[1-9][0-9]*\/v1$/);
  assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200);
  assert.equal(await srv.stop(), 0);
});

test('environment variables apply, and flags win over them', async () => {
  const dir = tempDir();
  const config = writeConfig(dir);
  const data = join(dir, 'env-data.json');
  const srv = await startBundle([], { cwd: dir, env: { PETSTORE_CONFIG: config, PETSTORE_DATA: data, HOST: '127.0.0.1', PORT: '1' } });
  // --port 0 (from startBundle) beat PORT=1; PETSTORE_DATA chose the data file.
  assert.equal((await post(`${srv.url}/pets`, KEYS.free, { name: 'env', categoryId: 1 })).status, 201);
  assert.equal(await srv.stop(), 0);
  const { readdirSync } = await import('node:fs');
  const files = readdirSync(dir).filter((f) => f.startsWith('env-data.json'));
  assert.ok(files.length > 0, 'PETSTORE_DATA chose the data file');
  assert.match(files.map((f) => readFileSync(join(dir, f), 'utf8')).join(''), /"env"/);
});

test('without a config file the built-in demo config is used', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--memory'], { cwd: dir });
  assert.match(srv.stderr(), /built-in demo config/);
  assert.equal((await call(`${srv.url}/pets`, { key: 'free-demo-key' })).status, 200);
  assert.equal(await srv.stop(), 0);
});

test('--memory writes nothing', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'data'));
  const srv = await startBundle(['--config', writeConfig(dir, testConfig({ dataFile: 'data/pets.json' })), '--memory'], { cwd: dir });
  assert.equal((await post(`${srv.url}/pets`, KEYS.free, { name: 'm', categoryId: 1 })).status, 201);
  assert.equal(await srv.stop(), 0);
  const { readdirSync } = await import('node:fs');
  assert.deepEqual(readdirSync(join(dir, 'data')), []);
});

test('SIGTERM and SIGINT finish in-flight work and exit 0; the data survives', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  const config = writeConfig(dir);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
    const pending = Array.from({ length: 20 }, (_, i) => post(`${srv.url}/pets`, KEYS.enterprise, { name: `${signal}-${i}`, categoryId: i }));
    const results = await Promise.all(pending);
    assert.ok(results.every((r) => r.status === 201));
    assert.equal(await srv.stop(signal), 0);
  }
  const again = await startBundle(['--config', config, '--data', data], { cwd: dir });
  const pets = (await call(`${again.url}/pets?limit=100`, { key: KEYS.enterprise })).json as Array<{ id: number }>;
  assert.deepEqual(pets.map((p) => p.id), Array.from({ length: 40 }, (_, i) => i + 1));
  assert.equal(await again.stop(), 0);
});

test('SIGKILL under load loses no acknowledged pet; ids are never reused', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  const config = writeConfig(dir);
  const acknowledged = new Map<number, string>();
  for (let round = 0; round < 4; round++) {
    const srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
    const before = acknowledged.size;
    let stop = false;
    const workers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const name = `r${round}-w${w}-${i}`;
        try {
          const res = await post(`${srv.url}/pets`, KEYS.enterprise, { name, categoryId: w });
          if (res.status === 201) acknowledged.set((res.json as { id: number }).id, name);
        } catch {
          return; // the connection died with the process: this create was never acknowledged
        }
      }
    });
    // Under load: kill once creates are being acknowledged, however slow the machine is.
    await until(`round ${round}: a create acknowledged`, () => acknowledged.size > before);
    await new Promise((r) => setTimeout(r, 150 + round * 70));
    srv.proc.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    await srv.exited;
  }
  const srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  const found = new Map<number, string>();
  await followPages(`${srv.url}/pets?limit=100`, KEYS.enterprise, (res) => {
    for (const p of res.json as Array<{ id: number; name: string }>) {
      assert.ok(!found.has(p.id), `id ${p.id} twice`);
      found.set(p.id, p.name);
    }
  });
  assert.ok(acknowledged.size > 0);
  for (const [id, name] of acknowledged) assert.equal(found.get(id), name, `acknowledged pet ${id} lost`);
  const next = await post(`${srv.url}/pets`, KEYS.enterprise, { name: 'after', categoryId: 1 });
  assert.ok((next.json as { id: number }).id > Math.max(...found.keys()), 'ids are never reused');
  assert.equal(await srv.stop(), 0);
});

test('a second process on the same data file refuses to start', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  const config = writeConfig(dir);
  const first = await startBundle(['--config', config, '--data', data], { cwd: dir });
  const second = await runBundle(['--config', config, '--data', data, '--port', '0'], { cwd: dir });
  assert.equal(second.code, 1);
  assert.ok(second.stderr.includes(data), second.stderr);
  assert.equal(await first.stop(), 0);
});

test('a data file under a directory that cannot be made is one message and exit 1, at once', { timeout: 30_000 }, async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'plain-file'), '');
  const cases = [join(dir, 'plain-file', 'sub', 'pets.json')];
  // /proc takes no new directories: node's recursive mkdir used to spin there for ever.
  if (existsSync('/proc/self')) cases.push('/proc/nope/x.json');
  for (const data of cases) {
    const r = await runBundle(['--config', writeConfig(dir), '--data', data, '--port', '0']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.ok(r.stderr.includes(data), `names the data file: ${r.stderr}`);
    assert.equal(r.stdout, '', 'nothing listening');
  }
});

test('the built-in config keeps pets in memory, says so in one line, and writes nothing', async () => {
  const dir = tempDir();
  const srv = await startBundle([], { cwd: dir });
  assert.equal((await post(`${srv.url}/pets`, 'free-demo-key', { name: 'Rex', categoryId: 1 })).status, 201);
  assert.equal(await srv.stop(), 0);
  const { readdirSync } = await import('node:fs');
  assert.deepEqual(readdirSync(dir), [], 'no data/ in the caller\'s directory');
  const lines = srv.stderr().split('\n').filter((l) => l !== '' && !/SIGTERM/.test(l));
  assert.equal(lines.length, 1, srv.stderr());
  assert.match(lines[0] as string, /built-in demo config.*in memory/);
  assert.doesNotMatch(srv.stdout(), /"level":40/, 'said once, on stderr');
});

test('a config without dataFile warns at start that pets will not survive a restart; --memory and dataFile do not', async () => {
  const dir = tempDir();
  const warning = /"level":40.*will not survive a restart/;
  let srv = await startBundle(['--config', writeConfig(dir)], { cwd: dir });
  await new Promise((r) => setTimeout(r, 50)); // the held log lines follow the ready line
  assert.match(srv.stdout(), warning);
  assert.match(srv.stdout().split('\n')[0] as string, /^petstore listening on /, 'the ready line stays first');
  assert.equal(await srv.stop(), 0);
  for (const args of [['--memory'], ['--data', join(dir, 'pets.json')]]) {
    srv = await startBundle(['--config', writeConfig(dir), ...args], { cwd: dir });
    await new Promise((r) => setTimeout(r, 50));
    assert.doesNotMatch(srv.stdout(), warning, args.join(' '));
    assert.equal(await srv.stop(), 0);
  }
  const help = await runBundle(['--help']);
  assert.match(help.stdout, /--data FILE[^\n]*\n[^\n]*in memory/, 'the help says what happens without a data file');
  assert.doesNotMatch(help.stdout, /data\/pets\.json/, 'and names no default file that is not used');
});

test('SIGTERM sent the moment the ready line is read stops the service cleanly (exit 0), every time', async () => {
  const dir = tempDir();
  const config = writeConfig(dir);
  const { spawn } = await import('node:child_process');
  const { BUNDLE } = await import('../support/bundle.js');
  for (let i = 0; i < 12; i++) {
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      const proc = spawn(process.execPath, [BUNDLE, '--port', '0', '--config', config, '--memory'], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (!proc.killed && out.includes('listening on')) proc.kill('SIGTERM'); // once: the stop logs to stdout too
      });
      proc.on('exit', (code, signal) => resolve({ code, signal }));
    });
    assert.deepEqual(exit, { code: 0, signal: null }, `run ${i + 1}: the signal found its handler`);
  }
});

test('the start line says where pets and limits live: memory, data file, this process, a limits file', async () => {
  const dir = tempDir();
  let srv = await startBundle(['--memory'], { cwd: dir });
  assert.match(srv.stderr(), /^petstore: no \.\/petstore\.config\.json; using the built-in demo config \(demo keys, do not expose\); pets in memory only, lost at exit; rate limits in this process only, full again at every restart$/m);
  assert.equal(await srv.stop(), 0);
  const config = writeConfig(dir);
  const data = join(dir, 'pets.json');
  srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  assert.ok(srv.stderr().includes(`petstore: config ${config}; pets in the data file ${data}; rate limits in this process, keys' day budgets and bans kept in ${data}.limits.json`), srv.stderr());
  assert.equal(await srv.stop(), 0);
});

test('--store without a config file: the start never says the pets are in memory, and never prints the password', async () => {
  // Nothing listens on port 1: the start fails, after saying what it tried.
  const r = await runBundle(['--port', '0', '--store', 'postgres://app:hunter2-secret@127.0.0.1:1/pets'], { cwd: tempDir() });
  assert.equal(r.code, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /in memory/);
  assert.doesNotMatch(r.stderr + r.stdout, /hunter2/);
  assert.match(r.stderr, /PostgreSQL/);
});

test('a URL with a bad percent-encoding is named by its setting, not "URI malformed", and never quoted', async () => {
  const dir = tempDir();
  const configDir = (extra: Record<string, unknown>): string => writeConfig(tempDir(), testConfig(extra));
  const cases: Array<{ args: string[]; env?: NodeJS.ProcessEnv; code: number; says: RegExp }> = [
    { args: ['--store', 'postgres://app:%zzsecret@127.0.0.1:1/pets'], code: 2, says: /--store: the password in the URL has a bad percent-encoding/ },
    { args: [], env: { PETSTORE_STORE: 'postgres://app%zzsecret:p@127.0.0.1:1/pets' }, code: 2, says: /PETSTORE_STORE: the user name in the URL has a bad percent-encoding/ },
    { args: ['--memory', '--limits', 'redis://:%zzsecret@127.0.0.1:1/0'], code: 2, says: /--limits: the password in the URL has a bad percent-encoding/ },
    { args: ['--memory'], env: { PETSTORE_LIMITS: 'redis://:%zzsecret@127.0.0.1:1/0' }, code: 2, says: /PETSTORE_LIMITS: the password/ },
    { args: ['--config', configDir({ store: 'postgres://app:%zzsecret@127.0.0.1:1/pets' })], code: 1, says: /petstore\.config\.json: invalid config:\n {2}- "store": the password in the URL has a bad percent-encoding/ },
    { args: ['--memory', '--config', configDir({ limits: 'redis://:%zzsecret@127.0.0.1:1/0' })], code: 1, says: /- "limits": the password in the URL/ },
  ];
  for (const c of cases) {
    const r = await runBundle(['--port', '0', ...c.args], { cwd: dir, env: c.env });
    assert.equal(r.code, c.code, r.stderr);
    assert.match(r.stderr, c.says);
    assert.doesNotMatch(r.stderr, /URI malformed|zzsecret/);
  }
});
