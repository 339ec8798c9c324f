// Tests of how a data file lock is judged (src/store/file/lock-holder.ts): by its heartbeat, and
// by its pid only where a pid means something (same boot, same pid namespace). The lock
// with real processes and files is lock-processes.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatHolder, judgeLock, parseHolder } from '../../../src/store/file/lock-holder.js';
import type { Holder, Verdict } from '../../../src/store/file/lock-holder.js';

const STALE = 10_000;
const NOW = Date.UTC(2026, 0, 1);
const self = { pid: 4242, host: 'vm', boot: 'boot-a', pidns: 'pid:[4026531836]' };
const alive = new Set([4242, 1, 77]);
const holder = (over: Partial<Holder>): Holder => ({ ...self, token: 't', ...over });

const cases: Array<{ name: string; holder: Holder | undefined; ageMs: number; want: Verdict['kind'] }> = [
  { name: 'live holder of this boot and namespace, refreshed 1 s ago', holder: holder({ pid: 77 }), ageMs: 1000, want: 'held' },
  { name: 'dead holder of this boot and namespace (a crash): free at once', holder: holder({ pid: 99 }), ageMs: 1000, want: 'free' },
  { name: 'our own pid in our namespace (an earlier namespace of that number)', holder: holder({ pid: 4242 }), ageMs: 10, want: 'free' },
  { name: 'pid 1 of another namespace (another container), fresh: watch the heartbeat', holder: holder({ pid: 1, pidns: 'pid:[4026532178]' }), ageMs: 10, want: 'watch' },
  { name: 'a live pid of another boot, fresh: watch, the pid means nothing', holder: holder({ pid: 77, boot: 'boot-b' }), ageMs: 10, want: 'watch' },
  { name: 'empty lock (written on a full disk), fresh: watch', holder: undefined, ageMs: 10, want: 'watch' },
  { name: 'a live pid of this namespace, not refreshed for longer than the stale time: free', holder: holder({ pid: 77 }), ageMs: STALE + 1, want: 'free' },
  { name: 'another boot, an hour old (left before a reboot): free', holder: holder({ pid: 1, boot: 'boot-b' }), ageMs: 3600_000, want: 'free' },
  { name: 'an mtime in the future (the clock stepped back): watch', holder: holder({ pid: 1, pidns: 'pid:[1]' }), ageMs: -60_000, want: 'watch' },
  { name: 'exactly the stale time: not yet stale', holder: undefined, ageMs: STALE, want: 'watch' },
];

for (const c of cases) {
  test(`judgeLock: ${c.name}`, () => {
    const verdict = judgeLock({ holder: c.holder, mtimeMs: NOW - c.ageMs }, self, NOW, STALE, (pid) => alive.has(pid));
    assert.equal(verdict.kind, c.want);
  });
}

test('judgeLock: without a boot id or namespace (not Linux) a pid is never trusted', () => {
  const bare = { ...self, boot: '', pidns: '' };
  const verdict = judgeLock({ holder: holder({ pid: 99, boot: '', pidns: '' }), mtimeMs: NOW }, bare, NOW, STALE, () => false);
  assert.equal(verdict.kind, 'watch');
});

test('parseHolder: reads what formatHolder writes; empty, torn and old-format locks are unknown', () => {
  const h = holder({ pid: 12 });
  assert.deepEqual(parseHolder(formatHolder(h)), h);
  for (const text of ['', '12\n', formatHolder(h).slice(0, 20), '{"pid":0,"host":"","boot":"","pidns":"","token":""}', 'null']) {
    assert.equal(parseHolder(text), undefined, JSON.stringify(text));
  }
});
