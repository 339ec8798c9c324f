// Two processes of the bundle on one PostgreSQL, as one service, under concurrent creates and
// cursor-following readers: ids become visible in the order they were given, so a page a client
// saw full never changes, no page skips a pet that later appears, every 201 is found by the
// other process on its very next request, and walking the pages gives exactly the pets that
// got a 201. Run twice: pets in PostgreSQL alone, and with limits in Redis too, where each
// process answers what cannot change from its read cache (emptied across processes by a reset
// or a seed before the next answer, also checked here).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { KEYS, UNTIL_MS, fresh, nextUrl, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const KEY = KEYS.enterprise;
const ADMIN_KEY = 'admin-key-for-tests-0123';
const CREATORS = 16;
const READERS = 16;
const CREATES_EACH = 16;
const STATUSES = ['available', 'pending', 'sold', undefined] as const;
const LIMITS = [2, 3, 7];

interface PageSeen {
  readonly query: string;
  readonly limit: number;
  readonly ids: number[];
}

/**
 * Every request on a connection of its own: the clients here pause (a server stopped or
 * started, a psql), and a kept-alive connection reused after a pause races the service's
 * keep-alive timeout, which a loaded machine loses now and then ("other side closed").
 * What is tested is what the processes answer, not connection reuse.
 */
const call = (url: string, init: { key: string }): Promise<Res> => fresh(url, init);
const post = (url: string, key: string, body: unknown): Promise<Res> =>
  fresh(url, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const idsOf = (res: Res): number[] => (res.json as Array<{ id: number }>).map((p) => p.id);

/** The query of a page URL (cursor, limit, status), without the instance's base. */
function queryOf(url: string): string {
  const u = new URL(url);
  const p = new URLSearchParams();
  for (const name of ['status', 'cursor', 'limit']) {
    const v = u.searchParams.get(name);
    if (v !== null) p.set(name, v);
  }
  return p.toString();
}

async function admin(srv: Running, path: string, body?: unknown): Promise<Res> {
  const base = srv.url.replace(/\/v1$/, '');
  return fresh(`${base}/__admin${path}`, {
    method: 'POST', key: ADMIN_KEY,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
}

for (const withRedis of [false, true]) {
  const skip = skipUnless('PostgreSQL cursor tests', withRedis ? ['postgres', 'redis'] : ['postgres']);
  describe(`two processes on one PostgreSQL${withRedis ? ' with limits in Redis (read cache)' : ''}`, { skip }, () => {
    let pg: PostgresServer;
    let redis: RedisServer | undefined;
    let a: Running;
    let b: Running;

    before(async () => {
      // At its defaults: a commit waits for its flush, the window in which a later id can
      // become visible before an earlier one if nothing orders them.
      pg = await startPostgres({ settings: { fsync: 'on', synchronous_commit: 'on' } });
      if (withRedis) redis = await startRedis();
      const dir = tempDir();
      const config = writeConfig(dir, testConfig({ admin: { sha256: createHash('sha256').update(ADMIN_KEY).digest('hex') } }));
      const args = ['--config', config, '--store', pg.url, ...(redis ? ['--limits', redis.url] : [])];
      [a, b] = await Promise.all([startBundle(args, { cwd: dir }), startBundle(args, { cwd: dir })]);
    });
    after(async () => {
      await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
      await redis?.close();
      await pg?.close();
    });

    it('32 concurrent creators and readers: full pages final, no holes, every 201 found by the other process, all pages = all 201s', async () => {
      assert.equal((await admin(a, '/reset')).status, 204);
      const created: number[] = [];
      const notFound: string[] = [];
      const seen: PageSeen[] = [];
      let creating = CREATORS;

      const creator = async (c: number): Promise<void> => {
        const [mine, other] = c % 2 === 0 ? [a, b] : [b, a];
        for (let i = 0; i < CREATES_EACH; i++) {
          const status = STATUSES[(c + i) % STATUSES.length];
          const res = await post(`${mine.url}/pets`, KEY, { name: `c${c}-${i}`, categoryId: c, ...(status ? { status } : {}) });
          assert.equal(res.status, 201, res.text);
          const id = (res.json as { id: number }).id;
          created.push(id);
          // The other process's next request finds it: by id, and listed right after id - 1.
          const byId = i % 2 === 0
            ? await call(`${other.url}/pets/${id}`, { key: KEY })
            : await call(`${other.url}/pets?limit=1&cursor=${id - 1}`, { key: KEY });
          const found = byId.status === 200 && (i % 2 === 0 ? (byId.json as { id: number }).id === id : idsOf(byId)[0] === id);
          if (!found) notFound.push(`${id} via ${other === a ? 'a' : 'b'}: ${byId.status} ${byId.text}`);
        }
        creating--;
      };

      const reader = async (r: number): Promise<void> => {
        let walks = 0;
        // Follows the pages, alternating processes, until the creators are done: every eighth
        // walk from the start, the others from a little before the newest 201 (where creates
        // are in flight, and a page can be seen while a lower id is still uncommitted).
        while (creating > 0 || walks === 0) {
          const status = r % 4 === 0 ? STATUSES[(r / 4) % 3] : undefined;
          const limit = LIMITS[(r + walks) % LIMITS.length] as number;
          const newest = created.length === 0 ? 0 : Math.max(...created.slice(-CREATORS));
          const from = walks % 8 === 0 ? 0 : Math.max(0, newest - limit - 1);
          let url: string | undefined = `${(r % 2 === 0 ? a : b).url}/pets?limit=${limit}${status ? `&status=${status}` : ''}${from > 0 ? `&cursor=${from}` : ''}`;
          let hop = 0;
          while (url !== undefined) {
            const res = await call(url, { key: KEY });
            assert.equal(res.status, 200, res.text);
            seen.push({ query: queryOf(url), limit, ids: idsOf(res) });
            const next = nextUrl(res.headers.get('link'));
            // The next page from the other process, by the same cursor.
            url = next === undefined ? undefined : next.replace(new URL(next).origin, new URL((hop % 2 === 0 ? b : a).url).origin);
            hop++;
          }
          walks++;
        }
      };

      await Promise.all([
        ...Array.from({ length: CREATORS }, (_, c) => creator(c)),
        ...Array.from({ length: READERS }, (_, r) => reader(r)),
      ]);

      assert.deepEqual(notFound, [], 'every 201 found by the other process on its next request');
      assert.equal(created.length, CREATORS * CREATES_EACH);

      // The final page of every query seen, asked of both processes (they must agree).
      const finals = new Map<string, number[]>();
      for (const query of new Set(seen.map((s) => s.query))) {
        const [fa, fb] = await Promise.all([a, b].map((p) => call(`${p.url}/pets?${query}`, { key: KEY })));
        assert.deepEqual(idsOf(fa as Res), idsOf(fb as Res), query);
        finals.set(query, idsOf(fa as Res));
      }
      const changedFull: string[] = [];
      const holes: string[] = [];
      for (const s of seen) {
        const final = finals.get(s.query) as number[];
        if (s.ids.length === s.limit) {
          if (JSON.stringify(s.ids) !== JSON.stringify(final)) changedFull.push(`${s.query}: saw [${s.ids}] then [${final}]`);
        } else if (JSON.stringify(s.ids) !== JSON.stringify(final.slice(0, s.ids.length))) {
          holes.push(`${s.query}: saw [${s.ids}] then [${final}]`);
        }
      }
      assert.deepEqual(changedFull.slice(0, 5), [], `${changedFull.length} of ${seen.length} pages seen full changed later`);
      assert.deepEqual(holes.slice(0, 5), [], `${holes.length} of ${seen.length} pages had a hole`);
      assert.ok(seen.length > READERS, 'the readers saw pages');

      // Walking every page, on either process, gives exactly the pets that got a 201.
      for (const p of [a, b]) {
        const walked: number[] = [];
        let url: string | undefined = `${p.url}/pets?limit=100`;
        while (url !== undefined) {
          const res = await call(url, { key: KEY });
          walked.push(...idsOf(res));
          url = nextUrl(res.headers.get('link'));
        }
        assert.deepEqual(walked, [...created].sort((x, y) => x - y));
      }
    });

    it('a reset or a seed through one process reaches the other before its next answer', async () => {
      assert.equal((await admin(a, '/reset')).status, 204);
      assert.equal((await admin(a, '/seed', Array.from({ length: 12 }, (_, i) => ({ name: `old${i + 1}`, categoryId: 1 })))).status, 201);
      // Read twice on b: its pets and full pages are now in its cache (when it has one).
      for (let i = 0; i < 3; i++) {
        const page = await call(`${b.url}/pets?limit=5`, { key: KEY });
        assert.deepEqual(idsOf(page), [1, 2, 3, 4, 5]);
        assert.equal(nextUrl(page.headers.get('link'))?.replace(/^.*\/pets/, ''), '?limit=5&cursor=5', 'the same next link every time');
        assert.equal((await call(`${b.url}/pets/3`, { key: KEY })).status, 200);
      }
      assert.equal((await admin(a, '/reset')).status, 204);
      assert.equal((await call(`${b.url}/pets/3`, { key: KEY })).status, 404);
      assert.deepEqual(idsOf(await call(`${b.url}/pets?limit=5`, { key: KEY })), []);
      // New pets under the old ids: b answers with them, not with what it read before the reset.
      const seeded = await admin(a, '/seed', Array.from({ length: 8 }, (_, i) => ({ name: `new${i + 1}`, categoryId: 2 })));
      assert.equal(seeded.status, 201, seeded.text);
      assert.equal(((await call(`${b.url}/pets/3`, { key: KEY })).json as { name: string }).name, 'new3');
      const page = await call(`${b.url}/pets?limit=5`, { key: KEY });
      assert.deepEqual((page.json as Array<{ name: string }>).map((p) => p.name), ['new1', 'new2', 'new3', 'new4', 'new5']);
      assert.deepEqual(idsOf(await call(`${a.url}/pets?limit=5&cursor=5`, { key: KEY })), [6, 7, 8]);
    });

    it('Redis stopped: nothing served from a cache, a reset is answered 503 and changes nothing; Redis back empty: caches start over', { skip: !withRedis }, async () => {
      assert.equal((await admin(a, '/reset')).status, 204);
      assert.equal((await admin(a, '/seed', Array.from({ length: 6 }, (_, i) => ({ name: `before${i + 1}`, categoryId: 1 })))).status, 201);
      for (let i = 0; i < 2; i++) assert.equal((await call(`${b.url}/pets/3`, { key: KEY })).status, 200);
      await redis?.stop();
      const reset = await admin(a, '/reset');
      assert.equal(reset.status, 503, reset.text);
      assert.ok(reset.headers.get('retry-after') !== null);
      // The limits are cleared first, so a reset that cannot reach Redis leaves the pets alone.
      // (Asked of b: a's fallback never heard of this key since the reset, so it refuses it.)
      assert.equal((await call(`${b.url}/pets/3`, { key: KEY })).status, 200);
      // b cannot ask Redis for the generation: it answers from PostgreSQL. A change that only
      // PostgreSQL sees shows it (the service itself never removes one pet).
      await pg.psql('DELETE FROM petstore_pets WHERE id = 3');
      assert.equal((await call(`${b.url}/pets/3`, { key: KEY })).status, 404);
      assert.deepEqual(idsOf(await call(`${b.url}/pets?limit=2&cursor=2`, { key: KEY })), [4, 5]);
      await redis?.start();
      // a's link comes back by itself (a probe a second): the reset is then done and answered.
      const end = Date.now() + UNTIL_MS;
      let again = await admin(a, '/reset');
      while (again.status === 503 && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100));
        again = await admin(a, '/reset');
      }
      assert.equal(again.status, 204, again.text);
      const seeded = await admin(a, '/seed', Array.from({ length: 4 }, (_, i) => ({ name: `after${i + 1}`, categoryId: 3 })));
      assert.equal(seeded.status, 201, seeded.text);
      for (const p of [a, b]) {
        for (let i = 0; i < 3; i++) {
          const res = await call(`${p.url}/pets/3`, { key: KEY });
          assert.equal((res.json as { name: string }).name, 'after3', res.text);
        }
      }
    });
  });
}
