// The typed config (PetstoreConfig) and the parser agree: every field the type declares is
// one the parser accepts. (A field the parser accepts but the type lacks could not be given
// by a TypeScript embedder: add it to src/config/file-format.ts with its JSDoc.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type PetstoreConfig } from '../../src/config/index.js';

test('a config with every typed field set is accepted', () => {
  // Required<>: the compiler refuses this test until every field of the type is given here.
  const all: Required<PetstoreConfig> = {
    $schema: './petstore.schema.json',
    host: '0.0.0.0',
    port: 0,
    dataFile: 'data/pets.json',
    store: 'postgres://petstore@127.0.0.1:5432/petstore',
    limits: 'redis://127.0.0.1:6379/0',
    limitsOutage: 'strict',
    environments: { production: 'https://api.example.com/v1', staging: 'https://staging.example.com/v1' },
    plans: { free: { perMinute: 1, perDay: 2 } },
    keys: [{ key: 'k', plan: 'free', name: 'n', limits: { perMinute: 3, perDay: 4 } }, { sha256: 'a'.repeat(64), plan: 'free' }],
    ban: { after: 1, seconds: 0 },
    anonymous: { perMinute: 5, perDay: 6 },
    anonymousTableSize: 7,
    maxBodyBytes: 1024,
    maxQueuedWrites: 8,
    trustProxy: true,
    cors: { origins: ['*'] },
    logLevel: 'silent',
    maxConnections: 9,
    maxPendingBodyBytes: 2048,
    idempotencyRetentionHours: 48,
    metrics: true,
    admin: { sha256: 'b'.repeat(64) },
    workers: 4,
    limitsFile: 'data/limits.json',
  };
  // store and dataFile answer one question (where pets live): one at a time.
  // limitsFile and limits answer where the limits live: one at a time too.
  const { store, limitsFile, ...withFile } = all;
  const { limits: _limits, ...inFile } = withFile;
  assert.equal(parseConfig({ ...inFile, limitsFile }, 'test', '/srv').limitsFile, '/srv/data/limits.json');
  const inPostgres = parseConfig({ ...withFile, dataFile: null, store }, 'test', '/srv');
  assert.equal(inPostgres.store, store);
  const config = parseConfig(withFile, 'test', '/srv');
  assert.equal(config.dataFile, '/srv/data/pets.json');
  assert.equal(config.keys.size, 2);
  assert.equal(config.maxPendingBodyBytes, 2048);
  assert.equal(config.workers, 4);
});
