// The waits of delayMs faults: they end after their time, or all at once when the service stops.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Faults } from '../../src/admin/index.js';

test('wait resolves after its time; stop() ends every wait under way, and later waits do not wait', async () => {
  const faults = new Faults();
  const order: string[] = [];
  const short = faults.wait(20).then(() => order.push('short'));
  const long = faults.wait(60_000).then(() => order.push('long'));
  await short;
  assert.deepEqual(order, ['short']);
  faults.stop();
  await long;
  assert.deepEqual(order, ['short', 'long']);
  let done = false;
  const later = faults.wait(60_000).then(() => { done = true; });
  await Promise.resolve();
  assert.equal(done, true, 'a wait asked for after stop() is over at once');
  await later;
});

import { ApiError } from '../../src/core/index.js';
import { parseFault, seededRandom, type Fault, type FaultHit, type FaultSpec } from '../../src/admin/index.js';

const OPS = ['listPets', 'createPet', 'getPet'];

/** take() of a Faults of one process: answered at once, never a promise. */
function now(faults: Faults, operation: string): FaultHit | undefined {
  const hit = faults.take(operation);
  assert.ok(!(hit instanceof Promise), 'one process decides at once');
  return hit;
}

function spec(body: Record<string, unknown>): FaultSpec {
  const parsed = parseFault(body, OPS);
  if (parsed instanceof ApiError) throw new Error(parsed.message);
  return parsed;
}

const BAD: Array<{ name: string; body: unknown; says: string[] }> = [
  { name: 'not an object', body: [1], says: ['must be a JSON object'] },
  { name: 'unknown operation', body: { operation: 'dropTables', status: 503 }, says: ['operation must be one of listPets, createPet, getPet or "*"'] },
  { name: 'nothing to do', body: { operation: 'listPets' }, says: ['give status (429 or 503), kind (reset, empty or truncated) or delayMs'] },
  { name: 'status and kind', body: { operation: 'listPets', status: 503, kind: 'reset' }, says: ['give status or kind, not both'] },
  { name: 'bad status', body: { operation: 'listPets', status: 500 }, says: ['status must be 429 or 503'] },
  { name: 'bad kind', body: { operation: 'listPets', kind: 'slow' }, says: ['kind must be one of reset, empty, truncated'] },
  { name: 'negative delay', body: { operation: 'listPets', delayMs: -1 }, says: ['delayMs must be an integer from 0 to 30000'] },
  { name: 'delay range upside down', body: { operation: 'listPets', delayMs: { min: 10, max: 5 } }, says: ['delayMs.min must not be above delayMs.max'] },
  { name: 'delay range with a stray field', body: { operation: 'listPets', delayMs: { min: 1, max: 5, mean: 3 } }, says: ['delayMs.mean is not a known field'] },
  { name: 'delay range without max', body: { operation: 'listPets', delayMs: { min: 1 } }, says: ['delayMs.max must be an integer'] },
  { name: 'count and probability', body: { operation: 'listPets', status: 503, count: 2, probability: 0.5 }, says: ['give count or probability, not both'] },
  { name: 'probability 0', body: { operation: 'listPets', status: 503, probability: 0 }, says: ['probability must be a number above 0 and at most 1'] },
  { name: 'probability above 1', body: { operation: 'listPets', status: 503, probability: 1.5 }, says: ['probability must be'] },
  { name: 'probability as text', body: { operation: 'listPets', status: 503, probability: '0.5' }, says: ['probability must be'] },
  { name: 'seed without probability', body: { operation: 'listPets', status: 503, seed: 1 }, says: ['seed goes with probability or a delayMs range'] },
  { name: 'seed not an integer', body: { operation: 'listPets', status: 503, probability: 0.5, seed: 1.5 }, says: ['seed must be an integer from 0 to 4294967295'] },
  { name: 'count 0', body: { operation: 'listPets', status: 503, count: 0 }, says: ['count must be an integer from 1 to 1000000'] },
  { name: 'retryAfter without status', body: { operation: 'listPets', kind: 'reset', retryAfter: 3 }, says: ['retryAfter goes with status'] },
  { name: 'unknown field', body: { operation: 'listPets', status: 503, extra: 1 }, says: ['"extra" is not a known field'] },
  {
    name: 'every problem at once',
    body: { operation: 'x', status: 500, delayMs: -1, count: 0, extra: 1 },
    says: ['"extra" is not a known field', 'operation must be', 'status must be 429 or 503', 'delayMs must be', 'count must be'],
  },
];

for (const c of BAD) {
  test(`a bad fault is a 400 naming the problem: ${c.name}`, () => {
    const parsed = parseFault(c.body, OPS);
    assert.ok(parsed instanceof ApiError, 'refused');
    assert.equal(parsed.status, 400);
    for (const part of c.says) assert.ok(parsed.message.includes(part), `${part} in: ${parsed.message}`);
  });
}

const GOOD: Array<{ name: string; body: Record<string, unknown>; expect: Partial<FaultSpec> }> = [
  { name: 'the old form', body: { operation: 'createPet', status: 503, count: 2 }, expect: { status: 503, count: 2, retryAfter: 1, delay: undefined, kind: undefined } },
  { name: 'a fixed delay', body: { operation: 'createPet', delayMs: 400 }, expect: { delay: { min: 400, max: 400 }, count: 1 } },
  { name: 'a delay range', body: { operation: '*', delayMs: { min: 5, max: 50 } }, expect: { operation: '*', delay: { min: 5, max: 50 } } },
  { name: 'a connection fault', body: { operation: 'createPet', kind: 'truncated' }, expect: { kind: 'truncated', status: undefined, count: 1 } },
  { name: 'a probability with a seed', body: { operation: 'getPet', status: 429, probability: 0.25, seed: 7, retryAfter: 9 }, expect: { probability: 0.25, seed: 7, count: undefined, retryAfter: 9 } },
  { name: 'a delay then a status', body: { operation: 'getPet', status: 503, delayMs: 10 }, expect: { status: 503, delay: { min: 10, max: 10 } } },
];

for (const c of GOOD) {
  test(`a fault body is accepted: ${c.name}`, () => {
    const parsed = spec(c.body);
    for (const [k, v] of Object.entries(c.expect)) assert.deepEqual((parsed as unknown as Record<string, unknown>)[k], v, k);
  });
}

test('a count fault catches the next count requests of its operation, then is gone', () => {
  const faults = new Faults();
  faults.set(spec({ operation: 'createPet', status: 503, count: 2 }));
  assert.equal(faults.armed, 1);
  assert.equal(now(faults, 'listPets'), undefined);
  assert.equal(now(faults, 'createPet')?.status, 503);
  assert.deepEqual(faults.list(), [{ operation: 'createPet', status: 503, retryAfter: 1, remaining: 1, fired: 1 }]);
  assert.equal(now(faults, 'createPet')?.status, 503);
  assert.equal(now(faults, 'createPet'), undefined);
  assert.equal(faults.armed, 0);
});

test('"*" catches every operation; an operation\'s own fault comes first', () => {
  const faults = new Faults();
  faults.set(spec({ operation: '*', status: 429, count: 3 }));
  faults.set(spec({ operation: 'getPet', kind: 'reset', count: 1 }));
  assert.equal(now(faults, 'getPet')?.kind, 'reset');
  assert.equal(now(faults, 'getPet')?.status, 429);
  assert.equal(now(faults, 'listPets')?.status, 429);
  assert.equal(now(faults, 'createPet')?.operation, '*');
  assert.equal(now(faults, 'createPet'), undefined);
});

test('a probability fault with a seed catches the same requests on every run, at about its rate', () => {
  const run = (): boolean[] => {
    const faults = new Faults();
    faults.set(spec({ operation: 'listPets', status: 503, probability: 0.3, seed: 12345 }));
    return Array.from({ length: 2000 }, () => now(faults, 'listPets') !== undefined);
  };
  const first = run();
  assert.deepEqual(run(), first);
  const caught = first.filter(Boolean).length;
  assert.ok(caught > 450 && caught < 750, `${caught} of 2000 at p = 0.3`);
});

test('a probability fault without a seed draws one and lists it; probability 1 catches every request', () => {
  const faults = new Faults();
  const armed = faults.set(spec({ operation: 'listPets', status: 503, probability: 1 }));
  assert.equal(typeof armed.seed, 'number');
  for (let i = 0; i < 10; i++) assert.equal(now(faults, 'listPets')?.status, 503);
  const [listed] = faults.list();
  assert.equal(listed?.seed, armed.seed);
  assert.equal(listed?.fired, 10);
  assert.equal(listed?.remaining, undefined);
});

test('a delay range gives delays within it, spread over it', () => {
  const faults = new Faults();
  faults.set(spec({ operation: 'listPets', delayMs: { min: 10, max: 19 }, count: 1000 }));
  const seen = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    const d = now(faults, 'listPets')?.delayMs as number;
    assert.ok(d >= 10 && d <= 19, String(d));
    seen.add(d);
  }
  assert.equal(seen.size, 10, 'every value of the range comes up');
});

test('save and load put faults back with what is left and where their sequence was', () => {
  const faults = new Faults();
  faults.set(spec({ operation: 'listPets', status: 503, probability: 0.5, seed: 3 }));
  faults.set(spec({ operation: 'createPet', kind: 'empty', count: 5 }));
  for (let i = 0; i < 7; i++) now(faults, 'listPets');
  now(faults, 'createPet');
  const saved = faults.save();
  const after = Array.from({ length: 50 }, () => now(faults, 'listPets') !== undefined);
  faults.clear();
  const other = new Faults();
  other.load(saved);
  assert.deepEqual(other.list(), [
    { ...faults.list()[0], operation: 'listPets', status: 503, retryAfter: 1, probability: 0.5, seed: 3, fired: saved[0]?.fired },
    { operation: 'createPet', kind: 'empty', remaining: 4, fired: 1 },
  ].map((x) => Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined))));
  assert.deepEqual(Array.from({ length: 50 }, () => now(other, 'listPets') !== undefined), after);
});

test('seededRandom is in [0, 1) and repeats for a seed', () => {
  const a = seededRandom(1);
  const b = seededRandom(1);
  for (let i = 0; i < 100; i++) {
    const x = a();
    assert.equal(x, b());
    assert.ok(x >= 0 && x < 1);
  }
  assert.notEqual(seededRandom(2)(), seededRandom(1)());
});


/** Workers of one service: each claim of a count fault goes to one counter (the primary's). */
class Worker extends Faults {
  constructor(readonly granted: Map<string, number>, readonly peers: Worker[]) {
    super();
  }
  protected override claim(fault: Fault): Promise<boolean> {
    return new Promise((resolve) => setImmediate(() => {
      const name = `${fault.operation} ${fault.armId}`;
      const n = this.granted.get(name) ?? 0;
      if (n >= (fault.armedCount ?? 0)) return resolve(false);
      this.granted.set(name, n + 1);
      resolve(true);
    }));
  }
  protected override used(operation: string, armId: string): void {
    for (const p of this.peers) if (p !== this) p.consume(operation, armId);
  }
}

test('with claims granted by one counter, a count fault catches exactly count requests over several instances at once', async () => {
  const granted = new Map<string, number>();
  const peers: Worker[] = [];
  peers.push(new Worker(granted, peers), new Worker(granted, peers));
  const [a, b] = peers as [Worker, Worker];
  for (const count of [1, 5, 20]) {
    const armed = a.set(spec({ operation: 'listPets', status: 503, count }));
    b.set(armed, a.armIdOf('listPets'));
    // Sixty requests at once, spread over both: every take is in flight before any is granted.
    const hits = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).take('listPets')));
    assert.equal(hits.filter((h) => h?.status === 503).length, count, `count ${count}`);
    assert.deepEqual([a.armed, b.armed], [0, 0], 'used up in both');
  }
  // A fault set again is a new arming: its claims start from nothing, and a consume told for the
  // old arming does not count against it.
  a.set(spec({ operation: 'listPets', status: 429, count: 2 }));
  const old = a.armIdOf('listPets') as string;
  a.set(spec({ operation: 'listPets', status: 429, count: 2 }));
  a.consume('listPets', old);
  assert.equal(a.list()[0]?.remaining, 2);
  assert.equal((await a.take('listPets'))?.status, 429);
  // The "*" fault still catches what a used-up count fault lets through.
  a.set(spec({ operation: '*', status: 503, count: 1 }));
  assert.equal((await a.take('listPets'))?.status, 429);
  assert.equal((await a.take('listPets'))?.status, 503);
  assert.equal(await a.take('listPets'), undefined);
});
