// The reset and the clock move across workers, with the workers joined as the primary joins
// them (asks reach the others a turn later; a worker that does not answer is counted as
// missing): every worker is on the reset clock before any limiter is cleared, each worker
// clears its own limiters, and a worker that does not confirm makes a clear 503, never a hang
// nor a reset half done on two clocks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, ServiceClock, type Clock } from '../../src/core/index.js';
import { Faults, openHarness, type Harness, type Peers } from '../../src/admin/index.js';
import type { LimitResult, Limiter } from '../../src/limits/index.js';
import type { PetStore } from '../../src/store/index.js';

const TEN_YEARS_MS = 315_360_000_000;
const base: Clock = { now: () => 1_700_000_000_000, monotonic: () => 1_000 };

interface Worker {
  readonly harness: Harness;
  readonly clock: ServiceClock;
  /** The clock offset each of its limiters saw when it was reset, in order. */
  readonly cleared: number[];
  storeResets: number;
  /** Answers nothing (a worker whose event loop is stuck). */
  deaf: boolean;
  /** Its limiters' reset fails with this. */
  failClear: string | undefined;
}

/** `n` workers joined through a stand-in primary. */
function workers(n: number): Worker[] {
  const all: Array<Worker & { answers: Map<string, (p: unknown) => unknown> }> = [];
  for (let i = 0; i < n; i++) {
    const answers = new Map<string, (p: unknown) => unknown>();
    const others = (): typeof all => all.filter((w) => w.answers !== answers);
    const askEvery = (what: string, payload: unknown): Promise<{ answers: unknown[]; missing: number }> => new Promise((resolve) => {
      setImmediate(() => {
        const asked = others();
        void Promise.all(asked.filter((w) => !w.deaf).map((w) => w.answers.get(what)?.(payload)))
          .then((got) => resolve({ answers: got, missing: asked.filter((w) => w.deaf).length }));
      });
    });
    const peers: Peers = {
      ask: async (what, payload) => (await askEvery(what, payload)).answers,
      askEvery,
      gather: () => Promise.resolve([]),
      tell: () => undefined,
      claim: () => Promise.resolve(true),
      answer: (what, fn) => { answers.set(what, fn); },
      onTold: () => undefined,
      close: () => undefined,
    };
    const clock = new ServiceClock(base);
    const cleared: number[] = [];
    const me = { clock, cleared, storeResets: 0, deaf: false, failClear: undefined as string | undefined, answers } as Worker & { answers: typeof answers };
    const limiter = (): Limiter => ({
      take: () => ({ outcome: 'ok' } as unknown as LimitResult),
      configure: () => undefined,
      retain: () => undefined,
      reset: async () => {
        if (me.failClear !== undefined) throw new Error(me.failClear);
        cleared.push(clock.offsetMs);
      },
      flush: () => Promise.resolve(),
      close: () => Promise.resolve(),
    });
    const store = { reset: async () => { me.storeResets++; } } as unknown as PetStore;
    const harness = openHarness({ clock, faults: new Faults(), journalSize: 0, peers, store, keyLimiter: limiter(), addressLimiter: limiter(), postgres: true });
    Object.assign(me, { harness });
    all.push(me);
  }
  return all;
}

async function moveAll(ws: readonly Worker[], ms: number): Promise<void> {
  await ws[0]!.harness.control.clock.advance(ms);
  for (const w of ws) assert.equal(w.clock.offsetMs, ms);
}

test('a reset takes every worker back to real time before any of them clears its limiters, and each clears its own', async () => {
  const ws = workers(3);
  await moveAll(ws, TEN_YEARS_MS);
  await ws[1]!.harness.reset();
  for (const w of ws) {
    assert.equal(w.clock.offsetMs, 0);
    assert.deepEqual(w.cleared, [0, 0], 'both limiters cleared, on the reset clock');
  }
  assert.equal(ws[1]!.storeResets, 1, 'the store (shared) emptied once, by the worker asked');
});

test('a worker that does not confirm the clock: 503 saying so, the clock where it was, nothing cleared', async () => {
  const ws = workers(2);
  await moveAll(ws, TEN_YEARS_MS);
  ws[1]!.deaf = true;
  await assert.rejects(ws[0]!.harness.reset(), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 503);
    assert.match(err.message, /^The reset did not happen: 1 worker\(s\) did not confirm taking the clock back within 2 s; nothing was cleared and the clock is where it was/);
    return true;
  });
  assert.equal(ws[0]!.clock.offsetMs, TEN_YEARS_MS);
  assert.deepEqual(ws.map((w) => [w.cleared.length, w.storeResets]), [[0, 0], [0, 0]]);
  // Once it answers again, the reset goes through.
  ws[1]!.deaf = false;
  await ws[0]!.harness.reset();
  assert.deepEqual(ws.map((w) => w.clock.offsetMs), [0, 0]);
});

test('a worker whose limits cannot be cleared: 503 with its reason, the clock put back in every worker, the store kept', async () => {
  const ws = workers(2);
  await moveAll(ws, 60_000);
  ws[1]!.failClear = 'Redis did not answer within 250 ms';
  await assert.rejects(ws[0]!.harness.reset(), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 503);
    assert.match(err.message, /clearing the rate limits \(Redis did not answer within 250 ms\).*pets and faults are unchanged, and the clock is where it was/);
    return true;
  });
  assert.deepEqual(ws.map((w) => w.clock.offsetMs), [60_000, 60_000]);
  assert.equal(ws[0]!.storeResets, 0);
});

test('a clock move that a worker does not confirm: 503 saying so (and not to repeat it); confirmed, 200 as before', async () => {
  const ws = workers(2);
  ws[1]!.deaf = true;
  await assert.rejects(ws[0]!.harness.control.clock.advance(1_000), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 503);
    assert.match(err.message, /1 of them did not confirm it within 2 s.*Do not repeat the move/);
    return true;
  });
  assert.equal(ws[0]!.clock.offsetMs, 1_000, 'moved where it was asked');
  ws[1]!.deaf = false;
  await ws[0]!.harness.control.clock.advance(1_000);
  assert.equal(ws[0]!.clock.offsetMs, 2_000);
});

test('alone: the reset is this process\'s own, in the same order', async () => {
  const clock = new ServiceClock(base);
  const cleared: number[] = [];
  const limiter: Limiter = {
    take: () => ({ outcome: 'ok' } as unknown as LimitResult),
    configure: () => undefined,
    retain: () => undefined,
    reset: () => { cleared.push(clock.offsetMs); },
    flush: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  let emptied = 0;
  const store = { reset: async () => { emptied++; } } as unknown as PetStore;
  const harness = openHarness({ clock, faults: new Faults(), journalSize: 0, peers: undefined, store, keyLimiter: limiter, addressLimiter: limiter, postgres: true });
  clock.advance(TEN_YEARS_MS);
  await harness.reset();
  assert.deepEqual(cleared, [0, 0]);
  assert.equal(emptied, 1);
  assert.equal(clock.offsetMs, 0);
});
