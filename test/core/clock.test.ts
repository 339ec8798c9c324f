import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_CLOCK_OFFSET_MS, ManualClock, ServiceClock, serviceClock, systemClock, wallThroughMonotonic } from '../../src/core/clock.js';
import type { Clock } from '../../src/core/types.js';

/** A base clock the test moves by hand. */
function base(wall: number): Clock & { wall: number; mono: number } {
  return { wall, mono: 0, now() { return this.wall; }, monotonic() { return this.mono; } };
}

test('a service clock adds its offset to both readings', () => {
  const b = base(1_000_000);
  const clock = new ServiceClock(b);
  clock.advance(3_600_000);
  assert.equal(clock.now(), 1_000_000 + 3_600_000);
  assert.equal(clock.monotonic(), 3_600_000);
  assert.equal(clock.offsetMs, 3_600_000);
  b.wall += 5;
  b.mono += 5;
  assert.equal(clock.now(), 1_000_000 + 3_600_005);
  assert.equal(clock.monotonic(), 3_600_005);
});

test('reset returns a service clock to its base', () => {
  const clock = new ServiceClock(base(42));
  clock.advance(10);
  clock.reset();
  assert.equal(clock.offsetMs, 0);
  assert.equal(clock.now(), 42);
});

const refused: Array<[string, number]> = [
  ['a negative amount', -1],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
];
for (const [name, ms] of refused) {
  test(`advance refuses ${name} and moves nothing`, () => {
    const clock = new ServiceClock(base(0));
    clock.advance(5);
    assert.throws(() => clock.advance(ms), RangeError);
    assert.equal(clock.offsetMs, 5);
  });
}

test('the offset is bounded in total', () => {
  const clock = new ServiceClock(base(0));
  clock.advance(MAX_CLOCK_OFFSET_MS);
  assert.throws(() => clock.advance(1), /reset it first/);
  assert.equal(clock.offsetMs, MAX_CLOCK_OFFSET_MS);
});

test('restoreOffset may move the clock back (a snapshot restore)', () => {
  const clock = new ServiceClock(base(0));
  clock.advance(1000);
  clock.restoreOffset(10);
  assert.equal(clock.now(), 10);
  assert.throws(() => clock.restoreOffset(-1), RangeError);
});

test('a ManualClock stands still at its start; every advance is its offset; reset goes back to the start', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  clock.advance(0.37);
  clock.advance(1000);
  assert.equal(clock.now(), Date.UTC(2026, 0, 1) + 1000.37);
  assert.equal(clock.monotonic(), 1000.37);
  clock.jumpWall(-500);
  assert.equal(clock.monotonic(), 1000.37, 'a wall step leaves monotonic time alone');
  assert.equal(clock.offsetMs, 1000.37);
  clock.reset();
  assert.equal(clock.now(), Date.UTC(2026, 0, 1) - 500);
  assert.equal(clock.monotonic(), 0);
});

test('a ManualClock may be moved back (a clock step test): its start moves, its offset stays', () => {
  const clock = new ManualClock(10_000);
  clock.advance(5000);
  clock.advance(-2000);
  assert.equal(clock.now(), 13_000);
  assert.equal(clock.monotonic(), 3000);
  assert.equal(clock.offsetMs, 5000);
  clock.reset();
  assert.equal(clock.now(), 8000);
});

test('serviceClock keeps a service clock given, wraps any other clock, and defaults to real time', () => {
  const manual = new ManualClock();
  assert.equal(serviceClock(manual), manual);
  const plain = base(7);
  const wrapped = serviceClock(plain);
  assert.notEqual(wrapped as unknown, plain);
  wrapped.advance(3);
  assert.equal(wrapped.now(), 10);
  assert.equal(plain.now(), 7);
  const real = serviceClock(undefined);
  assert.ok(Math.abs(real.now() - systemClock.now()) < 60_000);
});

test('the wall clock is read once a window and carried forward by the monotonic clock in between', () => {
  let wall = 1_700_000_000_123;
  let mono = 50.25;
  let reads = 0;
  const now = wallThroughMonotonic(() => {
    reads++;
    return wall;
  }, () => mono, 100);
  assert.equal(reads, 1);
  assert.equal(now(), 1_700_000_000_123);
  // Within the window: the reading plus the monotonic time since, in whole ms, without reading the wall clock.
  mono += 0.5;
  wall += 0.5; // (Date.now() itself would still say ...123)
  assert.equal(now(), 1_700_000_000_123);
  mono += 41.7;
  assert.equal(now(), 1_700_000_000_165);
  assert.equal(reads, 1);
  // The system clock is stepped back an hour by hand: seen once the window is over.
  wall = 1_700_000_000_123 - 3_600_000 + 99;
  mono = 50.25 + 99.9;
  assert.equal(now(), 1_700_000_000_123 + 99);
  assert.equal(reads, 1);
  mono = 50.25 + 100;
  assert.equal(now(), wall);
  assert.equal(reads, 2);
  mono += 10;
  assert.equal(now(), wall + 10);
  // A monotonic reading before the last one (never, from performance.now()) reads the wall clock again.
  mono -= 20;
  wall += 7;
  assert.equal(now(), wall);
  assert.equal(reads, 3);
});

test('the system clock reads the wall clock as Date.now() does, within a window', () => {
  for (let i = 0; i < 1000; i++) {
    const before = Date.now();
    const read = systemClock.now();
    const after = Date.now();
    assert.ok(Number.isInteger(read), `${read}`);
    // Within a millisecond: the reading is Date.now() in whole ms plus the monotonic time since,
    // floored, so it may lag by one, or by the order of the two clocks' reads lead by one.
    assert.ok(read >= before - 1 && read <= after + 1, `${before} - 1 <= ${read} <= ${after} + 1`);
  }
});
