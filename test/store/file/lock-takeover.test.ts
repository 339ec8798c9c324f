// Taking a stale data file lock over while other runs come and go (src/store/file/lock.ts):
// only the very lock that was judged stale is ever moved, and one takeover runs at a time.
// The `keys` command holds the same lock around each change of the config file, where many
// short runs release and take it many times a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { acquireLock, LockHeldError } from '../../../src/store/index.js';
import { formatHolder, thisProcess } from '../../../src/store/file/lock-holder.js';
import type { Clock, Logger } from '../../../src/core/types.js';
import { tempDir } from '../../support/bundle.js';

const linux = existsSync('/proc/self/ns/pid') && existsSync('/proc/sys/kernel/random/boot_id');
const naming = (pid: number): string => formatHolder({ ...thisProcess(), pid, token: randomUUID() });
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid as number;

function recorder(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { lines, logger: { log: (level, msg, fields) => { lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`); } } };
}

test('a lock released and made again by a live run between the look and the takeover is left alone', { skip: linux ? false : 'needs /proc' }, async () => {
  const dir = tempDir();
  const path = join(dir, 'c.json.lock');
  writeFileSync(path, naming(deadPid())); // left by a run that died: free at once
  let swapped = false;
  let live = undefined as unknown as import("node:fs").BigIntStats;
  // Read as the lock is judged, after the lock file was looked at: the dead run's lock goes
  // and a live run (pid 1 of this namespace, always alive) makes a new one, as happens
  // when many short runs take turns.
  const clock: Clock = {
    now: () => {
      if (!swapped) {
        swapped = true;
        unlinkSync(path);
        writeFileSync(path, naming(1));
        live = statSync(path, { bigint: true });
      }
      return Date.now();
    },
    monotonic: () => performance.now(),
  };
  const { logger, lines } = recorder();
  await assert.rejects(acquireLock(path, { logger, clock, staleMs: 10_000 }), (err: unknown) => err instanceof LockHeldError && /process 1\b/.test(err.message));
  const after = statSync(path, { bigint: true });
  assert.equal(after.ino, live.ino, 'the live lock is still the one at the path');
  assert.equal(after.ctimeNs, live.ctimeNs, 'the live lock was never renamed or linked');
  assert.deepEqual(lines.filter((l) => /taking over/.test(l)), [], 'nothing was taken over');
  assert.deepEqual(readdirSync(dir), ['c.json.lock']);
});

test('a file set aside by a takeover under way is not removed as a leftover by a run that takes the lock', { skip: linux ? false : 'needs /proc' }, async () => {
  const dir = tempDir();
  const path = join(dir, 'c.json.lock');
  // Another run (alive) is inside its takeover: it holds the guard and has set a lock aside,
  // which it may be about to put back.
  writeFileSync(`${path}.takeover`, naming(1));
  const aside = `${path}.stale-1-${randomUUID()}`;
  writeFileSync(aside, naming(1));
  const { logger } = recorder();
  const lock = await acquireLock(path, { logger, staleMs: 10_000 });
  lock.release();
  assert.ok(existsSync(aside), 'the file set aside is still there');
  // Once no takeover is under way, the next run removes it.
  unlinkSync(`${path}.takeover`);
  const next = await acquireLock(path, { logger, staleMs: 10_000 });
  next.release();
  assert.deepEqual(readdirSync(dir), []);
});

test('a takeover guard left by a run that died is cleared; a live one makes a start wait its turn', { skip: linux ? false : 'needs /proc' }, async () => {
  const dir = tempDir();
  const path = join(dir, 'c.json.lock');
  writeFileSync(path, naming(deadPid()));
  writeFileSync(`${path}.takeover`, naming(1));
  const { logger, lines } = recorder();
  await assert.rejects(acquireLock(path, { logger, staleMs: 10_000 }), LockHeldError);
  assert.ok(existsSync(path), 'the stale lock waits for the takeover under way');
  writeFileSync(`${path}.takeover`, naming(deadPid()));
  const lock = await acquireLock(path, { logger, staleMs: 10_000 });
  assert.equal(lines.filter((l) => /taking over a stale data file lock/.test(l)).length, 1);
  lock.release();
  assert.deepEqual(readdirSync(dir), []);
});
