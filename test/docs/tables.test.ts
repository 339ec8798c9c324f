// The generated reference tables are current (each page is what `npm run docs` would write),
// each table is on some page, and the command-line table covers what the code reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CLI_OPTIONS } from '../../src/cli/flags.js';
import { blocks, pages, render, ROOT, TABLES } from './tables.js';

test('every page holds the generated tables as the code has them (run `npm run docs` if not)', () => {
  for (const page of pages()) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    assert.equal(render(text, page), text, `${page} is stale: run npm run docs`);
  }
});

test('every generated table is on a page, and no page names an unknown one', () => {
  const found = new Set<string>();
  for (const page of pages()) for (const name of blocks(readFileSync(join(ROOT, page), 'utf8'))) found.add(name);
  assert.deepEqual([...found].sort(), Object.keys(TABLES).sort());
});

test('a block with an unknown name, or an edited table, is caught', () => {
  assert.throws(() => render('<!-- generated:nope -->\n<!-- /generated -->'), /no generated table named "nope"/);
  const fresh = render('<!-- generated:error-codes -->\n<!-- /generated -->');
  assert.notEqual(render(fresh.replace('| 404 |', '| 410 |')), fresh.replace('| 404 |', '| 410 |'));
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

test('the command-line table names every PETSTORE_ variable the code reads, and --help names every row', () => {
  const listed = new Set(CLI_OPTIONS.map((o) => o.env).filter((e) => e !== undefined));
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    for (const [name] of readFileSync(file, 'utf8').matchAll(/\bPETSTORE_[A-Z_]+\b/g)) {
      // PETSTORE_CLUSTER_*: set by the --workers primary for the processes it forks, never by a user.
      if (name.startsWith('PETSTORE_CLUSTER_')) continue;
      assert.ok(listed.has(name), `${relative(ROOT, file)} reads ${name}, which src/cli/flags.ts does not list`);
    }
  }
  const help = spawnSync(process.execPath, [join(ROOT, 'dist', 'petstore.js'), '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  for (const o of CLI_OPTIONS) {
    if (o.flag !== undefined) assert.ok(help.stdout.includes(`--${o.flag}`), `--help names --${o.flag}`);
    if (o.env !== undefined) assert.ok(help.stdout.includes(o.env), `--help names ${o.env}`);
  }
});
