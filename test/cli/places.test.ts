// The start line says where pets and rate limits live, never with a password; a URL with a
// bad percent-encoding is named by the setting that gave it, never quoted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limitsPlace, petsPlace, withoutSecrets } from '../../src/cli/places.js';
import { percentEncodingProblem } from '../../src/config/url-encoding.js';
import { parseConfig } from '../../src/config/index.js';

const config = parseConfig({}, 'test', '/srv');

test('pets: memory, a data file, PostgreSQL without password or query', () => {
  assert.equal(petsPlace({ store: undefined, dataFile: undefined }), 'pets in memory only, lost at exit');
  assert.equal(petsPlace({ store: undefined, dataFile: '/srv/pets.json' }), 'pets in the data file /srv/pets.json');
  const pg = petsPlace({ store: 'postgres://app:s3cr%40t@db.example:5433/pets?password=other&max=8', dataFile: undefined });
  assert.equal(pg, 'pets in PostgreSQL, postgres://app@db.example:5433/pets');
  assert.doesNotMatch(pg, /s3cr|other/);
});

test('limits: Redis without password, a limits file, this process', () => {
  assert.equal(limitsPlace({ limits: 'redis://:pw-123@cache:6380/2', dataFile: undefined, config }), 'rate limits in Redis, redis://cache:6380/2');
  assert.equal(limitsPlace({ limits: 'rediss://u:pw-123@[::1]:6380/0', dataFile: undefined, config }), 'rate limits in Redis, rediss://u@[::1]:6380/0');
  assert.match(limitsPlace({ limits: undefined, dataFile: '/srv/pets.json', config }), /this process, keys' day budgets and bans kept in \/srv\/pets\.json\.limits\.json$/);
  const withFile = parseConfig({ limitsFile: 'limits.json' }, 'test', '/srv');
  assert.match(limitsPlace({ limits: undefined, dataFile: undefined, config: withFile }), /kept in \/srv\/limits\.json$/);
  assert.equal(limitsPlace({ limits: undefined, dataFile: undefined, config }), 'rate limits in this process only, full again at every restart');
  assert.equal(withoutSecrets('not a url :: secret'), 'not a url ://(not a valid URL)');
});

test('a bad percent-encoding names the setting and the part, never the text', () => {
  const cases: Array<[string, RegExp]> = [
    ['postgres://u:p%zzsecret@h:5432/db', /^--store: the password in the URL has a bad percent-encoding/],
    ['postgres://u%e9secret:p@h:5432/db', /^--store: the user name in the URL/],
    ['postgres://u:p@h:5432/d%zbsecret', /^--store: the database in the URL/],
  ];
  for (const [url, says] of cases) {
    const problem = percentEncodingProblem(url, '--store');
    assert.match(problem ?? '', says, url);
    assert.doesNotMatch(problem ?? '', /secret/);
  }
  assert.equal(percentEncodingProblem('postgres://u:p%40ss@h:5432/db', '--store'), undefined);
  assert.equal(percentEncodingProblem('redis://h:6379/0', '--limits'), undefined);
});
