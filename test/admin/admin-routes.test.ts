// The admin operations as plain data: the clock's body, and what each harness route answers
// for what its control says (no HTTP: the handlers get plain data and return a Reply or an error).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_ROUTES, Faults, parseClockAdvance, type AdminContext, type AdminControl } from '../../src/admin/index.js';
import type { Reply } from '../../src/api/index.js';
import { ApiError, ManualClock, MAX_CLOCK_ADVANCE_MS } from '../../src/core/index.js';

test('the clock body: exactly {"advanceMs": N}, N an integer from 0 to ten years', () => {
  assert.equal(parseClockAdvance({ advanceMs: 0 }), 0);
  assert.equal(parseClockAdvance({ advanceMs: MAX_CLOCK_ADVANCE_MS }), MAX_CLOCK_ADVANCE_MS);
  for (const bad of [{ advanceMs: -1 }, { advanceMs: 0.5 }, { advanceMs: '1' }, { advanceMs: MAX_CLOCK_ADVANCE_MS + 1 }, {}, { advanceMs: 1, x: 1 }, null, [], 3, 'x']) {
    const r = parseClockAdvance(bad);
    assert.ok(r instanceof ApiError, JSON.stringify(bad));
    assert.equal(r.status, 400);
    assert.match(r.message, /advanceMs/);
  }
});

function control(over: Partial<AdminControl> = {}): AdminControl {
  const clock = new ManualClock();
  return {
    reset: () => Promise.resolve(), seed: () => Promise.resolve([]), faults: new Faults(),
    journal: { query: () => Promise.resolve({ records: [], dropped: 0 }), count: () => Promise.resolve(7), clear: () => Promise.resolve() },
    clock: { now: () => clock.now(), get offsetMs() { return clock.offsetMs; }, advance: (ms) => Promise.resolve(clock.advance(ms)) },
    snapshots: 'Snapshots are not available here: a test says so.',
    ...over,
  };
}

async function run(operationId: string, c: AdminControl, ctx: Partial<AdminContext> = {}): Promise<Reply | ApiError> {
  const route = ADMIN_ROUTES.find((r) => r.operationId === operationId);
  assert.ok(route, operationId);
  return route.handler({ body: undefined, rawQuery: '', params: {}, now: 0, control: c, operations: ['listPets'], ...ctx });
}

test('snapshot routes answer the 501 their control gives, with its message', async () => {
  for (const id of ['adminListSnapshots', 'adminSaveSnapshot', 'adminDeleteSnapshot', 'adminRestoreSnapshot']) {
    const r = await run(id, control(), { params: { name: 'x' } });
    assert.ok(r instanceof ApiError, id);
    assert.equal(r.status, 501);
    assert.match(r.message, /a test says so/);
  }
});

test('journal routes: filters checked before the control is asked; count answers {count}', async () => {
  const bad = await run('adminCountRequests', control(), { rawQuery: 'colour=red' });
  assert.ok(bad instanceof ApiError && bad.status === 400 && /colour/.test(bad.message));
  const count = await run('adminCountRequests', control(), { rawQuery: 'status=200' });
  assert.deepEqual(count, { status: 200, body: '{"count":7}' });
});

test('the clock route moves the clock and answers its new reading; past the total bound, a 400', async () => {
  const c = control();
  const r = await run('adminAdvanceClock', c, { body: { advanceMs: 5000 } }) as Reply;
  assert.equal(r.status, 200);
  assert.equal((JSON.parse(String(r.body)) as { offsetMs: number }).offsetMs, 5000);
  const tooFar = control({ clock: { now: () => 0, offsetMs: 0, advance: () => Promise.reject(new RangeError('the clock cannot move more than 1000 years ahead')) } });
  const refused = await run('adminAdvanceClock', tooFar, { body: { advanceMs: 1 } });
  assert.ok(refused instanceof ApiError && refused.status === 400 && /1000 years/.test(refused.message));
});
