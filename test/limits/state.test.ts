import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/core/clock.js';
import { loadLimiterState, parseLimiterState, saveLimiterState, startLimiterPersistence } from '../../src/limits/state.js';
import type { LogLevel, Logger } from '../../src/core/types.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import type { LimiterState } from '../../src/limits/state.js';
import type { Limits } from '../../src/core/index.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };

let root = '';
let n = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'limiter-state-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh empty directory per test. */
async function freshDir(): Promise<string> {
  const dir = join(root, `t${n++}`);
  await mkdir(dir);
  return dir;
}

function limiterWith(id: string, requests: number): MemoryLimiter {
  const limiter = new MemoryLimiter({ clock: new ManualClock(), ban: { after: 20, seconds: 300 } });
  for (let i = 0; i < requests; i++) limiter.take(id, FREE);
  return limiter;
}

function recordingLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = [];
  return {
    lines,
    log(level, msg, fields) {
      lines.push(fields === undefined ? { level, msg } : { level, msg, fields });
    },
  };
}

describe('saveLimiterState / loadLimiterState', () => {
  it('round trips a snapshot', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    const state = limiterWith('k', 10).toState();
    await saveLimiterState(file, state);
    assert.deepEqual(await loadLimiterState(file), state);
  });

  it('a missing file loads as undefined', async () => {
    const dir = await freshDir();
    assert.equal(await loadLimiterState(join(dir, 'absent.json')), undefined);
  });

  it('replaces the file whole and leaves no temp file behind', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    await saveLimiterState(file, limiterWith('old', 60).toState());
    const next = limiterWith('new', 3).toState();
    await saveLimiterState(file, next);
    assert.deepEqual(await loadLimiterState(file), next);
    assert.deepEqual(await readdir(dir), ['limiter.json']);
  });

  it('concurrent saves leave exactly one complete snapshot', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    const states = Array.from({ length: 20 }, (_, i) => limiterWith(`k${i}`, i + 1).toState());
    await Promise.all(states.map((s) => saveLimiterState(file, s)));
    const loaded = await loadLimiterState(file);
    assert.ok(states.some((s) => JSON.stringify(s) === JSON.stringify(loaded)));
    assert.deepEqual(await readdir(dir), ['limiter.json']);
  });

  it('a failed save names the file, keeps the old snapshot and removes its temp file', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    await mkdir(file); // a directory where the file should be: rename() fails
    await assert.rejects(saveLimiterState(file, limiterWith('k', 1).toState()), (err: Error) => {
      assert.ok(err.message.includes(file), err.message);
      return true;
    });
    assert.deepEqual(await readdir(dir), ['limiter.json']);
  });

  it('a missing directory is created; one that cannot be is an error naming the file', async () => {
    const dir = await freshDir();
    await saveLimiterState(join(dir, 'made', 'limiter.json'), limiterWith('k', 1).toState());
    assert.ok((await loadLimiterState(join(dir, 'made', 'limiter.json'))) !== undefined);
    await writeFile(join(dir, 'a-file'), 'not a directory');
    const file = join(dir, 'a-file', 'such', 'limiter.json');
    await assert.rejects(saveLimiterState(file, limiterWith('k', 1).toState()), (err: Error) => {
      assert.ok(err.message.includes(file), err.message);
      return true;
    });
  });

  it('a directory that is a file fails the save without a process warning', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'a-file'), 'not a directory');
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      await assert.rejects(saveLimiterState(join(dir, 'a-file', 'limiter.json'), limiterWith('k', 1).toState()));
      await sleep(10); // warnings are emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, [], 'no temp file can exist under a file: nothing to warn about');
  });

  const corrupt: Array<[string, string, RegExp]> = [
    ['truncated JSON', '{"version":1,"savedAt":', /not valid JSON/],
    ['empty file', '', /not valid JSON/],
    ['an array', '[]', /expected a JSON object/],
    ['wrong version', '{"version":2,"savedAt":0,"entries":[]}', /version/],
    ['missing savedAt', '{"version":1,"entries":[]}', /savedAt/],
    ['entries not an array', '{"version":1,"savedAt":0,"entries":{}}', /entries/],
    [
      'negative tokens',
      '{"version":1,"savedAt":0,"entries":[{"id":"k","perMinute":60,"perDay":1000,"minute":-1,"day":0,"strikes":0,"banMs":0}]}',
      /entries\[0\]\.minute/,
    ],
    [
      'id not a string',
      '{"version":1,"savedAt":0,"entries":[{"id":7,"perMinute":60,"perDay":1000,"minute":1,"day":0,"strikes":0,"banMs":0}]}',
      /entries\[0\]\.id/,
    ],
    [
      'zero limits',
      '{"version":1,"savedAt":0,"entries":[{"id":"k","perMinute":0,"perDay":1000,"minute":1,"day":0,"strikes":0,"banMs":0}]}',
      /entries\[0\]\.perMinute/,
    ],
  ];
  for (const [name, text, detail] of corrupt) {
    it(`a corrupt file (${name}) is an error naming the file`, async () => {
      const dir = await freshDir();
      const file = join(dir, 'limiter.json');
      await writeFile(file, text);
      await assert.rejects(loadLimiterState(file), (err: Error) => {
        assert.ok(err.message.includes(file), err.message);
        assert.match(err.message, detail);
        return true;
      });
    });
  }

  it('an unreadable path (a directory) is an error naming it', async () => {
    const dir = await freshDir();
    await assert.rejects(loadLimiterState(dir), (err: Error) => {
      assert.ok(err.message.includes(dir), err.message);
      return true;
    });
  });

  it('parseLimiterState accepts what toState produces', () => {
    const state: LimiterState = limiterWith('k', 61).toState();
    assert.deepEqual(parseLimiterState(JSON.parse(JSON.stringify(state))), state);
  });
});

describe('startLimiterPersistence', () => {
  it('saves periodically and once more on stop', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    const limiter = limiterWith('k', 1);
    const logger = recordingLogger();
    const p = startLimiterPersistence(limiter, file, { intervalMs: 10, logger });
    for (let i = 0; i < 100 && (await loadLimiterState(file)) === undefined; i++) await sleep(10);
    assert.equal((await loadLimiterState(file))?.entries[0]?.minute, 59);
    limiter.take('k', FREE);
    limiter.take('late', FREE);
    await p.stop();
    const saved = await loadLimiterState(file);
    assert.deepEqual(saved?.entries.map((e) => [e.id, e.minute]), [['k', 58], ['late', 59]]);
    assert.deepEqual(logger.lines, []);
    await p.stop(); // idempotent
  });

  it('flush() saves now', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    const limiter = limiterWith('k', 5);
    const p = startLimiterPersistence(limiter, file, { intervalMs: 60_000, logger: recordingLogger() });
    await p.flush();
    assert.equal((await loadLimiterState(file))?.entries[0]?.minute, 55);
    await p.stop();
  });

  it('a failing periodic save is logged as a warning and does not throw', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'a-file'), 'not a directory');
    const file = join(dir, 'a-file', 'limiter.json');
    const logger = recordingLogger();
    const p = startLimiterPersistence(limiterWith('k', 1), file, { intervalMs: 5, logger });
    for (let i = 0; i < 100 && logger.lines.length < 2; i++) await sleep(10);
    assert.ok(logger.lines.length >= 2, 'the timer keeps running after a failure');
    for (const line of logger.lines) {
      assert.equal(line.level, 'warn');
      assert.equal(line.fields?.['file'], file);
    }
    await assert.rejects(p.stop(), (err: Error) => err.message.includes(file));
  });

  it('restores into a new limiter from the saved file', async () => {
    const dir = await freshDir();
    const file = join(dir, 'limiter.json');
    const p = startLimiterPersistence(limiterWith('k', 60), file, { intervalMs: 60_000, logger: recordingLogger() });
    await p.stop();
    const state = await loadLimiterState(file);
    assert.ok(state);
    const clock = new ManualClock(state.savedAt);
    const fresh = new MemoryLimiter({ clock, ban: { after: 20, seconds: 300 } });
    fresh.restore(state);
    assert.equal(fresh.take('k', FREE).outcome, 'rate_limited');
    assert.match(await readFile(file, 'utf8'), /^\{"version":1,/);
  });
});
