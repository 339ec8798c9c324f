// `keys add|revoke` run at the same time on one config: serialized by a lock file beside it,
// so that no change reported done (exit 0) is lost; a lock left by a crashed run is taken
// over; a lock held by a live run makes a change wait, then fail with the file untouched.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, readlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { runBundle, tempDir } from '../support/bundle.js';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

function config(dir: string): string {
  const file = join(dir, 'c.json');
  writeFileSync(file, '{\n  "keys": [\n    {"key":"a","plan":"free","name":"x"},\n    {"key":"victim-secret","plan":"free","name":"victim"}\n  ]\n}\n');
  return file;
}

/** The digests and names in the file (it must be a valid config). */
function keysIn(file: string): { digests: Set<string>; names: Set<string> } {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { keys: Array<{ sha256?: string; key?: string; name: string }> };
  return {
    digests: new Set(doc.keys.map((k) => k.sha256 ?? sha256(k.key as string))),
    names: new Set(doc.keys.map((k) => k.name)),
  };
}

/** A lock file as a keys command of this boot and pid namespace writes it, naming `pid`. */
function lockNaming(pid: number): string {
  const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const pidns = readlinkSync('/proc/self/ns/pid');
  return `${JSON.stringify({ pid, host: hostname(), boot, pidns, token: randomUUID() })}\n`;
}

const linux = existsSync('/proc/self/ns/pid') && existsSync('/proc/sys/kernel/random/boot_id');

describe('concurrent keys commands', () => {
  test('16 keys add at once, 5 rounds: each exits 0 and each key it printed is in the file', async () => {
    for (let round = 0; round < 5; round++) {
      const dir = tempDir();
      const file = config(dir);
      const runs = await Promise.all(Array.from({ length: 16 }, (_, i) =>
        runBundle(['keys', 'add', '--plan', 'free', '--name', `c${i}`, '--config', file], { cwd: dir })));
      const { digests, names } = keysIn(file);
      runs.forEach((r, i) => {
        assert.equal(r.code, 0, `round ${round}, c${i}: ${r.stderr}`);
        assert.ok(digests.has(sha256(r.stdout.trim())), `round ${round}: c${i} was reported added but is not in the file`);
        assert.ok(names.has(`c${i}`));
      });
      assert.equal(digests.size, 18);
      assert.deepEqual(readdirSync(dir), ['c.json'], 'no lock or temp file left');
    }
  });

  test('keys revoke alongside 8 keys add, 8 rounds: the revoke exits 0 and the key is gone; every add is there', async () => {
    for (let round = 0; round < 8; round++) {
      const dir = tempDir();
      const file = config(dir);
      const adds = Array.from({ length: 8 }, (_, i) => runBundle(['keys', 'add', '--plan', 'free', '--name', `c${i}`, '--config', file], { cwd: dir }));
      const revoke = runBundle(['keys', 'revoke', 'victim', '--config', file], { cwd: dir });
      const [revoked, ...added] = await Promise.all([revoke, ...adds]);
      assert.equal(revoked?.code, 0, revoked?.stderr);
      const { digests, names } = keysIn(file);
      assert.ok(!names.has('victim'), `round ${round}: the revoke exited 0 but the key is still in the file`);
      assert.ok(!digests.has(sha256('victim-secret')));
      for (const r of added) {
        assert.equal(r.code, 0, r.stderr);
        assert.ok(digests.has(sha256(r.stdout.trim())));
      }
    }
  });
});

describe('the lock file', { skip: linux ? false : 'needs /proc (pid namespace and boot id)' }, () => {
  test('left by a run that died (its pid gone): taken over at once, saying so; the change made; the lock removed', async () => {
    const dir = tempDir();
    const file = config(dir);
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    writeFileSync(`${file}.lock`, lockNaming(dead));
    const r = await runBundle(['keys', 'revoke', 'victim', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`taking over the stale lock .*c\\.json\\.lock \\(process ${dead} is gone\\)`));
    assert.ok(!keysIn(file).names.has('victim'));
    assert.deepEqual(readdirSync(dir), ['c.json']);
  });

  test('empty and not touched for a minute (its holder on another machine, or a full disk): taken over', async () => {
    const dir = tempDir();
    const file = config(dir);
    writeFileSync(`${file}.lock`, '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    const r = await runBundle(['keys', 'add', '--plan', 'pro', '--name', 'late', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /taking over the stale lock .*\(not refreshed for \d+ ms\)/);
    assert.ok(keysIn(file).digests.has(sha256(r.stdout.trim())));
    assert.deepEqual(readdirSync(dir), ['c.json']);
  });

  test('held by a live process: a change waits, then fails with exit 1 naming the holder; the file and the lock untouched; list still reads', async () => {
    const dir = tempDir();
    const file = config(dir);
    const before = readFileSync(file);
    const lock = lockNaming(process.pid); // this test process is alive
    writeFileSync(`${file}.lock`, lock);
    const r = await runBundle(['keys', 'add', '--plan', 'pro', '--name', 'blocked', '--config', file], { cwd: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '', 'no key printed');
    assert.match(r.stderr, new RegExp(`is being changed by process ${process.pid}: its lock .*c\\.json\\.lock is held; nothing written, try again`));
    assert.ok(readFileSync(file).equals(before));
    assert.equal(readFileSync(`${file}.lock`, 'utf8'), lock);
    assert.deepEqual(readdirSync(dir).sort(), ['c.json', 'c.json.lock']);
    const list = await runBundle(['keys', 'list', '--config', file], { cwd: dir });
    assert.equal(list.code, 0, list.stderr);
  });
});
