// `npm run backends` (try-backends.ts): starts PostgreSQL and Redis, prints their URLs and the
// petstore line, both answer; SIGINT stops them, removes their folders and exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { skipUnless } from './engines.js';
import { accepts } from './free-port.js';
import { rawCommand } from './redis.js';
import { until } from './wait.js';

const skip = skipUnless('npm run backends', ['postgres', 'redis']);
const SCRIPT = new URL('./try-backends.js', import.meta.url).pathname;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  test(`npm run backends: two URLs and the line to run; ${signal} stops both and removes their folders`, { skip }, async (t) => {
    const child = spawn(process.execPath, [SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await until('the Ctrl-C line', () => /Ctrl-C stops both/.test(out) || child.exitCode !== null, 90_000);
    assert.match(out, /Ctrl-C stops both/, err);

    const line = /^ {2}PETSTORE_STORE=(postgres:\/\/\S+) PETSTORE_LIMITS=(redis:\/\/\S+) node \S*dist\/petstore\.js --workers 2$/m.exec(out);
    assert.ok(line, out);
    const [, pgUrl = '', redisUrl = ''] = line;
    const dirs = [...out.matchAll(/\(folder (\S+)\)/g)].map((m) => m[1] as string);
    assert.equal(dirs.length, 2, out);
    for (const d of dirs) assert.ok(existsSync(d), `${d} exists while running`);

    const sql = postgres(pgUrl, { max: 1, connect_timeout: 10, onnotice: () => {} });
    try {
      assert.deepEqual([...(await sql`SELECT 1 AS one`)], [{ one: 1 }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
    const redisPort = Number(new URL(redisUrl).port);
    assert.equal(await rawCommand(redisPort, ['PING'], 5000), '+PONG');

    child.kill(signal);
    assert.equal(await exited, 0, `${out}\n${err}`);
    assert.match(out, /stopped; folders removed/);
    for (const d of dirs) assert.equal(existsSync(d), false, `${d} removed`);
    assert.equal(await accepts(Number(new URL(pgUrl).port)), false, 'PostgreSQL stopped');
    assert.equal(await accepts(redisPort), false, 'Redis stopped');
  });
}
