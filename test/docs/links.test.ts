// Every relative link in README.md and docs/*.md resolves, to a file of the repository and,
// with a #fragment, to a heading of that page (GitHub's slugs); file paths the pages name in
// code spans exist; and nothing points outside the repository. docs/_incoming/ is skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pages, ROOT } from './tables.js';

/** The text outside fenced code blocks (a `# comment` in a shell block is not a heading). */
export function prose(text: string): string {
  let inFence: string | undefined;
  return text.split('\n').map((line) => {
    const fence = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (inFence === undefined) inFence = fence[0];
      else if (fence[0] === inFence) inFence = undefined;
      return '';
    }
    return inFence === undefined ? line : '';
  }).join('\n');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const counts = new Map<string, number>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const plain = (heading as string)
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text
      .replace(/<[^>]+>/g, '');
    const base = plain.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
    const n = counts.get(base) ?? 0;
    counts.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Inline links and reference definitions, outside code. */
export function links(text: string): string[] {
  const body = prose(text).replace(/`[^`\n]*`/g, '');
  const inline = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const refs = [...body.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1] as string);
  return [...inline, ...refs];
}

test('GitHub slugs: punctuation dropped, code spans kept as text, repeats numbered', () => {
  const a = anchors('# More than one process\n## `--workers` and PostgreSQL\n```sh\n# not a heading\n```\n## Notes\n## Notes\n');
  assert.deepEqual([...a], ['more-than-one-process', '--workers-and-postgresql', 'notes', 'notes-1']);
});

test('every relative link of README.md and docs/*.md resolves to a file and heading of the repository', () => {
  const problems: string[] = [];
  for (const page of pages()) {
    const path = join(ROOT, page);
    const text = readFileSync(path, 'utf8');
    for (const target of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [file = '', fragment] = target.split('#', 2);
      const dest = file === '' ? path : resolve(dirname(path), decodeURIComponent(file));
      const rel = relative(ROOT, dest);
      if (rel.startsWith('..') || rel.startsWith('/')) {
        problems.push(`${page}: ${target} points outside the repository`);
        continue;
      }
      if (rel.split('/')[0] === 'docs' && rel.split('/')[1] === '_incoming') {
        problems.push(`${page}: ${target} points into docs/_incoming, which is folded in and deleted`);
        continue;
      }
      if (!existsSync(dest)) {
        problems.push(`${page}: ${target}: no such file`);
        continue;
      }
      if (fragment !== undefined && fragment !== '') {
        if (!statSync(dest).isFile() || !dest.endsWith('.md')) {
          problems.push(`${page}: ${target}: a fragment into a file that is not a page`);
        } else if (!anchors(readFileSync(dest, 'utf8')).has(fragment)) {
          problems.push(`${page}: ${target}: no heading with that anchor in ${rel}`);
        }
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('the repository paths the pages name in code spans exist', () => {
  // Outputs that builds and scripts make (ignored by git) are named but not committed.
  const made = /^(dist|build|data|test\/bench\/results|test\/tools\/\.generated|test\/bench\/node_modules|test\/tools\/node_modules)\//;
  const problems: string[] = [];
  for (const page of pages()) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const [, path] of text.matchAll(/`((?:src|test|docs|\.ci)\/[A-Za-z0-9_.\/-]*[A-Za-z0-9_])`/g)) {
      if (made.test(path as string)) continue;
      if (!existsSync(join(ROOT, path as string))) problems.push(`${page}: \`${path}\` does not exist`);
    }
  }
  assert.deepEqual(problems, []);
});

test('nothing in README.md or docs/ refers to documents outside the repository', () => {
  for (const page of pages()) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const outside of [/shared\/(spec|CONTRACT)/, /\bCONTRACT\b/, /\/work\//, /the spec\b/i]) {
      assert.doesNotMatch(text, outside, `${page} mentions ${outside}`);
    }
  }
});
