// The waits of delayMs faults: they end after their time, or all at once when the service stops.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Faults } from '../../src/api/index.js';

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
