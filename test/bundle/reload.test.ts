// Two quick SIGHUPs: the config read last is the one in force, so a key removed by the second
// reload is not valid again because the first finished later. The first
// reload reads a large file (100,000 keys) and the second a small one: unserialized, the small
// one could finish first and the older file be applied last (a removed key valid again).
// A FIFO used to hold the first read open so that the race happened every time; reloads now
// refuse anything but a regular file, so a read cannot be held, and the race is only likely:
// three rounds, which an unserialized build failed in about a third of runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, startBundle, tempDir } from '../support/bundle.js';
import { until } from '../support/wait.js';

const KEPT = 'kept-key-0001';
const REMOVED = 'removed-key-0001';

function configWith(keys: string[], filler = 0, keptPlan = 'free'): string {
  const all = [...keys, ...Array.from({ length: filler }, (_, i) => `filler-key-${i}`)];
  return JSON.stringify({ keys: all.map((key) => ({ key, plan: key === KEPT ? keptPlan : 'free' })), anonymous: { perMinute: 1000, perDay: 100000 } });
}

/** The X-RateLimit-Limit KEPT gets: 300 once the newer file (KEPT on "pro") is in force, else 60. */
async function keptLimit(url: string): Promise<number> {
  const res = await call(`${url}/pets`, { key: KEPT });
  assert.notEqual(res.status, 401, 'KEPT is in every file');
  return Number(res.headers.get('x-ratelimit-limit'));
}

/** Points the symlink `link` at `target` in one rename, as a deploy tool would. */
function repoint(link: string, target: string): void {
  const tmp = `${link}.tmp`;
  symlinkSync(target, tmp);
  renameSync(tmp, link);
}

/** Waits until `count` has not changed for 500 ms. */
async function quiet(count: () => number): Promise<void> {
  let last = count();
  let since = Date.now();
  while (Date.now() - since < 500) {
    await sleep(20);
    if (count() !== last) {
      last = count();
      since = Date.now();
    }
  }
}

test('two quick SIGHUPs: the file read last wins, a key it removed is refused', { skip: process.platform === 'win32' }, async () => {
  const dir = tempDir();
  const link = join(dir, 'petstore.config.json');
  const both = join(dir, 'both.json');
  const newer = join(dir, 'newer.json');
  const older = join(dir, 'older.json');
  writeFileSync(both, configWith([KEPT, REMOVED]));
  writeFileSync(newer, configWith([KEPT], 0, 'pro'));
  writeFileSync(older, configWith([KEPT, REMOVED], 100_000));
  symlinkSync(both, link);

  const srv = await startBundle(['--memory', '--config', link], { cwd: dir });
  const reloads = (): number => srv.stderr().split('\n').filter((l) => l.includes('config reloaded')).length;
  try {
    assert.equal((await call(`${srv.url}/pets`, { key: REMOVED })).status, 200);

    let done = 0;
    for (let round = 1; round <= 3; round++) {
      // First SIGHUP: the large file, with REMOVED. Second, at once: the small one, without.
      repoint(link, older);
      srv.proc.kill('SIGHUP');
      await sleep(1);
      repoint(link, newer);
      srv.proc.kill('SIGHUP');
      // Two signals of a kind still pending merge into one (the one reload then reads the
      // newer file): wait until the reloads are over, one or two of them, and the newer file
      // is in force (on a slow machine the large file's reload can take longer than the quiet
      // wait), then a while more, in case an older read were applied after it.
      const before = done;
      await until('the reloads', () => reloads() > before);
      await until('the newer file in force', async () => (await keptLimit(srv.url)) === 300, undefined, 250);
      await quiet(reloads);
      done = reloads();

      assert.equal(await keptLimit(srv.url), 300, `round ${round}: the file read last is in force`);
      assert.equal((await call(`${srv.url}/pets`, { key: KEPT })).status, 200);
      const removed = await call(`${srv.url}/pets`, { key: REMOVED });
      assert.equal(removed.status, 401, `round ${round}: the key removed by the file read last is refused`);
    }
  } finally {
    await srv.stop();
  }
});
