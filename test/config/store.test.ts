// The config's `store`: a PostgreSQL URL, never beside a dataFile, and never
// echoed in a problem message (it may hold a password).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/index.js';
import { restartOnlyChanges } from '../../src/server/lifecycle.js';
import { problems } from '../support/config-problems.js';


test('store: absent by default; a postgres:// or postgresql:// URL is kept as given', () => {
  assert.equal(parseConfig({}, 'x', '/srv').store, undefined);
  assert.equal(parseConfig({ store: 'postgres://u:p@db:5432/pets' }, 'x', '/srv').store, 'postgres://u:p@db:5432/pets');
  assert.equal(parseConfig({ store: 'postgresql://db/pets?max=8' }, 'x', '/srv').store, 'postgresql://db/pets?max=8');
  assert.equal(parseConfig({ store: null, dataFile: 'pets.json' }, 'x', '/srv').dataFile, '/srv/pets.json');
});

test('store: not a PostgreSQL URL, or beside a dataFile, is refused without echoing the URL', () => {
  for (const store of ['mysql://u:hunter2@h/db', '', 42, 'postgres:/nohost', { url: 'postgres://h/db' }]) {
    const p = problems({ store });
    assert.deepEqual(p, ['store must be a PostgreSQL URL, "postgres://user:password@host:5432/database"'], JSON.stringify(store));
  }
  assert.deepEqual(problems({ store: 'postgres://u:hunter2@h/db', dataFile: 'pets.json' }), [
    'store and dataFile cannot both be given: pets live in PostgreSQL or in a data file',
  ]);
});

test('a reload that changes store says it applies only after a restart', () => {
  const old = parseConfig({ store: 'postgres://h/a' }, 'x', '/srv');
  assert.deepEqual(restartOnlyChanges(old, parseConfig({ store: 'postgres://h/b' }, 'x', '/srv')), ['store']);
  assert.deepEqual(restartOnlyChanges(old, parseConfig({ store: 'postgres://h/a' }, 'x', '/srv')), []);
});
