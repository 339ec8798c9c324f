// The read cache's bound in bytes is true for any name: filled as the PostgreSQL store fills it
// (30,000 pets by id, then 2,000 distinct full pages of 101, 240-character names) in a process whose
// heap is capped at 128 MiB, it must neither run out of memory nor hold more live memory than it
// counted, and what it counted stays within its bound. Names of ASCII, Latin-1, CJK and emoji
// (two UTF-16 units each) characters: the last two take two bytes a character in V8. A cache
// bounded in entries, or keeping a copy of a pet for every page it is on, dies here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { READ_CACHE_MAX_BYTES } from '../../../src/store/index.js';

const FILL = fileURLToPath(new URL('./read-cache-fill.js', import.meta.url));
const MiB = 1024 * 1024;

interface Filled { added: number; counted: number; size: { pets: number; pages: number; pagePets: number } }

function fill(kind: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=128', FILL, kind, '30000', '2000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

for (const kind of ['ascii', 'latin1', 'cjk', 'emoji']) {
  test(`a read cache filled with ${kind} names holds no more than it counts, and counts no more than its bound`, async () => {
    const { code, out, err } = await fill(kind);
    assert.equal(code, 0, `the filling process ended with ${code}: ${err.slice(-600)}`);
    const r = JSON.parse(out) as Filled;
    const at = `added ${(r.added / MiB).toFixed(1)} MiB, counted ${(r.counted / MiB).toFixed(1)} MiB, ${JSON.stringify(r.size)}`;
    assert.ok(r.counted <= READ_CACHE_MAX_BYTES, `within its bound: ${at}`);
    assert.ok(r.counted > READ_CACHE_MAX_BYTES * 0.9, `the fill reached the bound: ${at}`);
    assert.ok(r.added <= r.counted, `the live heap grew by no more than was counted: ${at}`);
    assert.ok(r.size.pages > 100, `pages were kept: ${at}`);
  });
}
