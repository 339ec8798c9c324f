// Pages: GET /pets with a cursor, and `Link: <...>; rel="next"` on every
// page that has a successor, filters carried over, none on the last page (also when the last
// page is exactly full), and a walk that visits every pet exactly once, even while pets are
// being added.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, call, nextUrl, post, startBundle, tempDir, writeConfig, type Running } from '../support/bundle.js';

interface Pet { id: number; name: string; categoryId: number; status?: string }
interface Page { pets: Pet[]; next: string | undefined; link: string | null }

const key = KEYS.enterprise;
const STATUSES = ['available', 'pending', 'sold', undefined] as const;
const TOTAL = 45; // statuses cycle: 12 available (i % 4 == 1), 11 pending, 11 sold, 11 none
let srv: Running;

async function page(url: string): Promise<Page> {
  const res = await call(url, { key });
  assert.equal(res.status, 200, res.text);
  const link = res.headers.get('link');
  return { pets: res.json as Pet[], next: nextUrl(link), link };
}

/** Follows next links from `first`; returns every page. */
async function walk(first: string, between?: (pageNo: number) => Promise<void>): Promise<Page[]> {
  const pages: Page[] = [];
  let url: string | undefined = first;
  while (url !== undefined) {
    const p = await page(url);
    pages.push(p);
    assert.ok(pages.length <= TOTAL + 50, 'the walk ends');
    url = p.next;
    if (url !== undefined && between) await between(pages.length);
  }
  return pages;
}

async function all(status?: string): Promise<number[]> {
  const filter = status === undefined ? '' : `&status=${status}`;
  return (await page(`${srv.url}/pets?limit=100${filter}`)).pets.map((p) => p.id);
}

before(async () => {
  const dir = tempDir();
  srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
  for (let i = 1; i <= TOTAL; i++) {
    const status = STATUSES[i % 4];
    const res = await post(`${srv.url}/pets`, key, status === undefined ? { name: `pet${i}`, categoryId: i } : { name: `pet${i}`, categoryId: i, status });
    assert.equal(res.status, 201, res.text);
  }
});
after(() => srv.stop());

describe('following next', () => {
  for (const limit of [1, 7, 20, 44, 100]) {
    test(`limit=${limit}: every pet exactly once, in id order; a link on every page but the last`, async () => {
      const pages = await walk(`${srv.url}/pets?limit=${limit}`);
      const ids = pages.flatMap((p) => p.pets.map((pet) => pet.id));
      assert.deepEqual(ids, await all());
      assert.equal(ids.length, TOTAL);
      assert.equal(pages.length, Math.ceil(TOTAL / limit));
      pages.forEach((p, i) => {
        const last = i === pages.length - 1;
        assert.equal(p.next === undefined, last, `page ${i + 1}: next link ${last ? 'absent' : 'present'}`);
        if (!last) assert.equal(p.pets.length, limit, 'every page but the last is full');
      });
    });
  }

  for (const limit of [5, 9, 15, 45]) {
    test(`limit=${limit}: a last page that is exactly full carries no next link`, async () => {
      assert.equal(TOTAL % limit, 0);
      const pages = await walk(`${srv.url}/pets?limit=${limit}`);
      const last = pages[pages.length - 1];
      assert.equal(last?.pets.length, limit);
      assert.equal(last?.link, null);
      assert.equal(pages.length, TOTAL / limit, 'no empty page at the end');
    });
  }

  test('the default limit (20) is carried over explicitly', async () => {
    const first = await page(`${srv.url}/pets`);
    assert.equal(first.pets.length, 20);
    assert.match(first.next ?? '', /[?&]limit=20(&|$)/);
  });

  for (const status of ['available', 'pending', 'sold']) {
    test(`status=${status} is carried over to every next link, with the limit`, async () => {
      const pages = await walk(`${srv.url}/pets?status=${status}&limit=4`);
      for (const p of pages) {
        for (const pet of p.pets) assert.equal(pet.status, status);
        if (p.next !== undefined) {
          const next = new URL(p.next);
          assert.equal(next.searchParams.get('status'), status);
          assert.equal(next.searchParams.get('limit'), '4');
          assert.ok(next.searchParams.get('cursor'), 'a cursor');
        }
      }
      assert.deepEqual(pages.flatMap((p) => p.pets.map((pet) => pet.id)), await all(status));
    });
  }

  test('links are absolute, on the base the client used, and keep to /v1/pets', async () => {
    const p = await page(`${srv.url}/pets?limit=2`);
    assert.ok(p.next?.startsWith(`${srv.url}/pets?`), p.next);
  });

  test('no link when everything fits, on an empty result, and past the end', async () => {
    assert.equal((await page(`${srv.url}/pets?limit=100`)).link, null);
    const last = (await all()).at(-1) as number;
    const past = await page(`${srv.url}/pets?cursor=${last}`);
    assert.deepEqual(past.pets, []);
    assert.equal(past.link, null);
    const dir = tempDir();
    const empty = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
    try {
      const res = await call(`${empty.url}/pets?limit=1`, { key });
      assert.deepEqual(res.json, []);
      assert.equal(res.headers.get('link'), null);
    } finally {
      await empty.stop();
    }
  });

  test('the body stays a plain JSON array of Pet', async () => {
    const p = await page(`${srv.url}/pets?limit=3`);
    assert.ok(Array.isArray(p.pets));
    assert.deepEqual(Object.keys(p.pets[0] ?? {}).sort(), ['categoryId', 'id', 'name', 'status']);
  });
});

describe('while pets are being added', () => {
  test('following next visits every pet exactly once (old ones all, new ones at most once)', async () => {
    const before = await all();
    const added: number[] = [];
    const pages = await walk(`${srv.url}/pets?limit=6`, async (pageNo) => {
      if (pageNo > 6) return;
      // Several concurrent creates between two page requests.
      const results = await Promise.all([1, 2, 3].map((j) => post(`${srv.url}/pets`, key, { name: `late${pageNo}-${j}`, categoryId: 99, status: 'sold' })));
      for (const r of results) {
        assert.equal(r.status, 201, r.text);
        added.push((r.json as Pet).id);
      }
    });
    const seen = pages.flatMap((p) => p.pets.map((pet) => pet.id));
    assert.equal(new Set(seen).size, seen.length, 'no pet twice');
    assert.deepEqual([...seen].sort((a, b) => a - b), seen, 'ascending ids across pages');
    for (const id of before) assert.ok(seen.includes(id), `pet ${id}, there before the walk, was visited`);
    assert.equal(added.length, 18);
    // Pets created before the last page was read have ids below what it reached: all seen.
    assert.deepEqual(seen.filter((id) => !before.includes(id)).sort((a, b) => a - b), [...added].sort((a, b) => a - b));
  });

  test('concurrent creates during a filtered walk: the filter holds, nothing twice', async () => {
    const before = await all('sold');
    const seen: number[] = [];
    const writers = (async () => {
      for (let i = 0; i < 10; i++) {
        await Promise.all(['sold', 'available'].map((status) => post(`${srv.url}/pets`, key, { name: `bg${i}`, categoryId: 5, status })));
      }
    })();
    const pages = await walk(`${srv.url}/pets?limit=3&status=sold`);
    await writers;
    for (const p of pages) for (const pet of p.pets) {
      assert.equal(pet.status, 'sold');
      seen.push(pet.id);
    }
    assert.equal(new Set(seen).size, seen.length, 'no pet twice');
    for (const id of before) assert.ok(seen.includes(id), `pet ${id} was visited`);
  });
});
