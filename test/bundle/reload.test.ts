// Two quick SIGHUPs: the config read last is the one in force (issue 11, item 10). The first
// reload is held inside its read by a FIFO, so the race that used to let the older file win
// (a removed key staying valid) is made to happen every time rather than once in a dozen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, renameSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, startBundle, tempDir } from '../helpers.js';

const KEPT = 'kept-key-0001';
const REMOVED = 'removed-key-0001';

function configWith(keys: string[]): string {
  return JSON.stringify({ keys: keys.map((key) => ({ key, plan: 'free' })), anonymous: { perMinute: 1000, perDay: 100000 } });
}

/** Points the symlink `link` at `target` in one rename, as a deploy tool would. */
function repoint(link: string, target: string): void {
  const tmp = `${link}.tmp`;
  symlinkSync(target, tmp);
  renameSync(tmp, link);
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Opens the FIFO for writing once a reader holds it (ENXIO until then). */
async function openWhenRead(fifo: string): Promise<number> {
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > end) throw err;
      await sleep(5);
    }
  }
}

test('two quick SIGHUPs: the file read last wins, a key it removed is refused', { skip: process.platform === 'win32' }, async () => {
  const dir = tempDir();
  const link = join(dir, 'petstore.config.json');
  const both = join(dir, 'both.json');
  const newer = join(dir, 'newer.json');
  const fifo = join(dir, 'older.fifo');
  writeFileSync(both, configWith([KEPT, REMOVED]));
  writeFileSync(newer, configWith([KEPT]));
  execFileSync('mkfifo', [fifo]);
  symlinkSync(both, link);

  const srv = await startBundle(['--memory', '--config', link], { cwd: dir });
  const reloads = (): number => srv.stderr().split('\n').filter((l) => l.includes('config reloaded')).length;
  try {
    assert.equal((await call(`${srv.url}/pets`, { key: REMOVED })).status, 200);

    // First SIGHUP: the file is (for now) a FIFO, so its read waits for us.
    repoint(link, fifo);
    srv.proc.kill('SIGHUP');
    const fd = await openWhenRead(fifo);
    // Second SIGHUP: the file now holds the newer config, without REMOVED.
    repoint(link, newer);
    srv.proc.kill('SIGHUP');
    // Unserialized, the second reload finishes here while the first is still reading; give
    // it the chance (serialized, it waits for the first and nothing shows).
    await until('the second reload, if it runs ahead', () => reloads() >= 1, 1_000).catch(() => undefined);
    // Now the first read completes, with the older content (REMOVED still in it).
    writeSync(fd, configWith([KEPT, REMOVED]));
    closeSync(fd);
    await until('both reloads', () => reloads() === 2);

    assert.equal((await call(`${srv.url}/pets`, { key: KEPT })).status, 200);
    const removed = await call(`${srv.url}/pets`, { key: REMOVED });
    assert.equal(removed.status, 401, 'the key removed by the file read last is refused');
  } finally {
    await srv.stop();
  }
});
