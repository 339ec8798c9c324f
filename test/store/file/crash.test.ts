// A real crash test: a child process writes pets through the file store and is killed with
// SIGKILL at a random moment, over several rounds on the same data file (with compaction
// forced often, so kills also land inside journal rotations and snapshot writes). After
// each kill the store must hold every pet the child saw acknowledged, unchanged, with ids
// unique and ascending, and no id may ever be acknowledged twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openFileStore } from '../../../src/store/index.js';
import type { StoredPet } from '../../../src/store/index.js';
import { allPets } from '../../support/bundle.js';
import type { Logger } from '../../../src/core/types.js';

const CHILD = fileURLToPath(new URL('../../fixtures/store-child.js', import.meta.url));
const ROUNDS = 10;
/** Small, so that the child rotates the journal and writes snapshots while it is killed. */
const COMPACT_MIN_BYTES = 4096;

interface RoundResult {
  /** id -> JSON text of every pet whose create resolved in the child. */
  acknowledged: Map<number, string>;
  stderr: string;
}

/** Runs the child until it has written for `killAfterMs`, then SIGKILLs it. */
async function runAndKill(file: string, round: number, killAfterMs: number): Promise<RoundResult> {
  const child = spawn(process.execPath, [CHILD, file, String(COMPACT_MIN_BYTES), String(round)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let timer: NodeJS.Timeout | undefined;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (timer === undefined && stdout.startsWith('ready\n')) {
      timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
    child.on('close', (c, s) => done([c, s])),
  );
  clearTimeout(timer);
  assert.equal(signal, 'SIGKILL', `the child ended by itself (code ${code}): ${stderr}`);
  const acknowledged = new Map<number, string>();
  const lines = stdout.split('\n');
  lines.pop(); // the last piece has no newline: not a whole acknowledgement
  for (const line of lines.slice(1)) {
    const tab = line.indexOf('\t');
    acknowledged.set(Number(line.slice(0, tab)), line.slice(tab + 1));
  }
  return { acknowledged, stderr };
}


const quietLogger: Logger = { log: () => undefined };

test('file store: nothing acknowledged is lost when the writer is killed (SIGKILL)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'pets.json');
  const everAcknowledged = new Map<number, string>();
  let totalAcknowledged = 0;

  for (let round = 0; round < ROUNDS; round++) {
    const killAfterMs = 20 + Math.floor(Math.random() * 180);
    const { acknowledged, stderr } = await runAndKill(file, round, killAfterMs);
    for (const [id, json] of acknowledged) {
      assert.equal(everAcknowledged.has(id), false, `id ${id} acknowledged twice (round ${round})`);
      everAcknowledged.set(id, json);
    }
    totalAcknowledged += acknowledged.size;

    const store = await openFileStore(file, { logger: quietLogger });
    try {
      const pets = allPets(store);
      assert.equal(pets.length, store.count);
      for (let i = 1; i < pets.length; i++) {
        assert.ok((pets[i] as StoredPet).pet.id > (pets[i - 1] as StoredPet).pet.id, 'ids unique and ascending');
      }
      for (const [id, json] of everAcknowledged) {
        assert.equal(store.get(id)?.json, json, `pet ${id} after round ${round} (killed at ${killAfterMs} ms) ${stderr}`);
      }
    } finally {
      await store.close();
    }
  }
  assert.ok(totalAcknowledged > 0, 'the child acknowledged some pets');
  t.diagnostic(`${ROUNDS} kills, ${totalAcknowledged} acknowledged pets checked`);
});
