// The rule that decides when a PostgreSQL outage begins and ends (one line each), whatever
// order the answers and failures of statements arrive in: a failure counts only if nothing
// was answered after its statement was sent, an answer only if its statement was sent after
// the outage began. The orderings below are the ones a restart under load produces: a
// statement stuck on a connection attempt made during the engine's start-up fails after the
// recovery answer; during a shutdown an older statement is answered after the first failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LogLevel, Logger } from '../../../src/core/index.js';
import { OutageReport } from '../../../src/store/postgres/outage.js';

function report(): { outage: OutageReport; msgs: () => string[] } {
  const lines: Array<{ level: LogLevel; msg: string }> = [];
  const logger: Logger = { log: (level, msg) => void lines.push({ level, msg }) };
  const outage = new OutageReport(logger, 'postgres://db/petstore');
  return { outage, msgs: () => lines.map((l) => `${l.level} ${l.msg.slice(0, l.msg.indexOf(';') === -1 ? undefined : l.msg.indexOf(';'))}`) };
}

const UNREACHABLE = 'error PostgreSQL unreachable';
const BACK = 'info PostgreSQL answers again';

test('one outage: the first failure begins it, the first answer to a statement sent since ends it', () => {
  const { outage, msgs } = report();
  const a = outage.send();
  const b = outage.send();
  assert.equal(outage.failed(a, 'ECONNREFUSED'), true);
  assert.equal(outage.failed(b, 'ECONNREFUSED'), false, 'the rest of the outage is not logged again');
  assert.equal(outage.down, 'unreachable');
  const probe = outage.send();
  outage.answered(probe);
  assert.equal(outage.down, false);
  assert.deepEqual(msgs(), [UNREACHABLE, BACK]);
});

test('a statement sent before the recovery answer and failing after it (a connection attempt made during start-up) is not a new outage', () => {
  const { outage, msgs } = report();
  outage.failed(outage.send(), 'ECONNREFUSED');
  const stuck = outage.send(); // its connection attempt reaches the engine while it starts up
  const probe = outage.send();
  outage.answered(probe); // the engine is ready: answers again
  assert.equal(outage.failed(stuck, 'the database system is starting up'), false);
  assert.equal(outage.failed(stuck, 'CONNECT_TIMEOUT'), false);
  assert.equal(outage.down, false, 'readiness stays green');
  assert.deepEqual(msgs(), [UNREACHABLE, BACK]);
  assert.equal(outage.stats.staleFailures, 2);
});

test('a statement sent before the outage began and answered after it does not end it', () => {
  const { outage, msgs } = report();
  const old = outage.send(); // running when the shutdown begins
  outage.failed(outage.send(), 'terminating connection due to administrator command');
  outage.answered(old);
  assert.equal(outage.down, 'unreachable', 'an older answer says nothing of whether the engine is back');
  outage.failed(outage.send(), 'ECONNREFUSED');
  outage.answered(outage.send());
  assert.deepEqual(msgs(), [UNREACHABLE, BACK], 'never alternating');
  assert.equal(outage.stats.staleAnswers, 1);
});

test('an engine that answers, then fails a statement sent after that answer, went away twice: two outages', () => {
  const { outage, msgs } = report();
  outage.failed(outage.send(), 'ECONNREFUSED');
  outage.answered(outage.send());
  const later = outage.send();
  assert.equal(outage.failed(later, 'ECONNREFUSED'), true);
  outage.answered(outage.send());
  assert.deepEqual(msgs(), [UNREACHABLE, BACK, UNREACHABLE, BACK]);
});

test('a refusal is its own kind: logged with what to change, and a change of kind while down is logged once', () => {
  const { outage, msgs } = report();
  outage.failed(outage.send(), 'ECONNREFUSED');
  const refused = outage.send();
  assert.equal(outage.failed(refused, 'too many clients', 'raise max_connections'), true);
  assert.equal(outage.down, 'refused');
  assert.equal(outage.failed(outage.send(), 'too many clients', 'raise max_connections'), false);
  outage.answered(outage.send());
  assert.deepEqual(msgs(), [UNREACHABLE, "error PostgreSQL refuses petstore's connections", BACK]);
});
