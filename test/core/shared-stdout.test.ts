// Several processes writing log lines to one stdout pipe (the workers of --workers N share the
// primary's) with a reader that is slow: no line may ever be cut by another process's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sleep } from '../support/bundle.js';

const WRITER = fileURLToPath(new URL('../fixtures/log-writer.js', import.meta.url));
const LINES = 3000;

test('two processes on one stdout pipe, a reader that keeps it full: every line arrives whole', { timeout: 180_000 }, async () => {
  // One pipe shared by both writers: the shell hands its stdout to both.
  const sh = spawn('/bin/sh', ['-c', `"${process.execPath}" "${WRITER}" a ${LINES} & "${process.execPath}" "${WRITER}" b ${LINES} & wait`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  sh.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const chunks: Buffer[] = [];
  const out = sh.stdout;
  const exited = new Promise<number | null>((resolve) => sh.on('close', (code) => resolve(code)));
  let done = false;
  void exited.then(() => { done = true; });
  // The slow reader: a little at a time, with pauses, so that the pipe stays full and the
  // writers find it so.
  out.pause();
  while (!done) {
    await sleep(2);
    let chunk: Buffer | null;
    let taken = 0;
    while (taken < 3000 && (chunk = out.read() as Buffer | null) !== null) {
      chunks.push(chunk);
      taken += chunk.length;
    }
    if (out.readableEnded) break;
  }
  out.resume();
  out.on('data', (c: Buffer) => chunks.push(c));
  assert.equal(await exited, 0, stderr);
  const text = Buffer.concat(chunks).toString('utf8');
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'ends with a whole line');
  const broken: string[] = [];
  const seen = { a: 0, b: 0 } as Record<string, number>;
  let dropNotes = 0;
  for (const line of lines) {
    try {
      const o = JSON.parse(line) as { w: string; n: number; pad: string; msg?: string };
      if (o.msg !== undefined && /^log lines dropped/.test(o.msg)) {
        dropNotes++;
        continue;
      }
      if (o.pad.length !== o.n) throw new Error('length');
      seen[o.w] = (seen[o.w] ?? 0) + 1;
    } catch {
      broken.push(`${line.slice(0, 60)}... (${line.length} bytes)`);
    }
  }
  assert.deepEqual(broken, [], `${broken.length} broken lines of ${lines.length}`);
  // Lines dropped while more than the bound waited are said in a warn line; most arrive.
  assert.ok((seen.a ?? 0) > LINES / 10 && (seen.b ?? 0) > LINES / 10, JSON.stringify({ seen, dropNotes }));
  assert.equal(stderr, '');
});
