import { test } from 'node:test';
import assert from 'node:assert/strict';
import { yieldToLoop } from '../../src/core/steps.js';

test('steps of copies under way at once go on one per turn of the event loop, in turn', async () => {
  const seen: string[] = [];
  let on = true;
  // Another user of the loop: a setImmediate chain, as a request's I/O would be served.
  const tick = (): void => {
    seen.push('loop');
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const chain = async (name: string): Promise<void> => {
    for (let i = 0; i < 4; i++) {
      await yieldToLoop();
      seen.push(name);
    }
  };
  await Promise.all([chain('a'), chain('b'), chain('c')]);
  on = false;
  const steps = seen.filter((s) => s !== 'loop');
  assert.deepEqual(steps, ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'], 'first come, first served');
  // Never two steps in one turn: the loop's own callback runs between any two of them.
  const first = seen.indexOf('a');
  for (let i = first + 1; i < seen.length; i++) {
    if (seen[i] !== 'loop') assert.equal(seen[i - 1], 'loop', `two steps in one turn: ${seen.slice(first, i + 1).join(' ')}`);
  }
});
