// Proves that a client generated from GET /v1/openapi.json can call every operation:
//   1. start the built bundle, fetch the document, write it to .generated/openapi.json;
//   2. generate TypeScript types from it with openapi-typescript (.generated/api.d.ts);
//   3. type-check calls.mjs (openapi-fetch typed by those types) with tsc;
//   4. run calls.mjs against the bundle and check every status, and that every operation
//      of the document was called.
// Usage: npm run build (at the root), then here: npm ci && node generated-client.mjs
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEMO_KEY, startBundle } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const server = await startBundle();
let failed = false;
try {
  const doc = await server.doc();
  mkdirSync(`${here}.generated`, { recursive: true });
  writeFileSync(`${here}.generated/openapi.json`, JSON.stringify(doc, null, 2));

  const gen = spawnSync(process.execPath, ['node_modules/openapi-typescript/bin/cli.js', '.generated/openapi.json', '-o', '.generated/api.d.ts'], { cwd: here, encoding: 'utf8' });
  if (gen.status !== 0) throw new Error(`openapi-typescript failed:\n${gen.stdout}${gen.stderr}`);
  console.log(`openapi-typescript: ${(gen.stdout + gen.stderr).trim().split('\n').pop()}`);

  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { cwd: here, encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`calls.mjs does not type-check against the generated types:\n${tsc.stdout}${tsc.stderr}`);
  console.log('tsc: calls.mjs type-checks against .generated/api.d.ts (and the wrong calls are rejected)');

  const { callEveryOperation } = await import('./calls.mjs');
  const calls = await callEveryOperation(server.url, DEMO_KEY);
  for (const c of calls) {
    const ok = c.status === c.expected;
    if (!ok) failed = true;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${c.operationId.padEnd(11)} ${c.method.padEnd(4)} ${c.path.padEnd(32)} ${c.status}${ok ? '' : ` (expected ${c.expected})`}`);
  }
  const documented = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  const missed = documented.filter((id) => !calls.some((c) => c.operationId === id));
  if (missed.length > 0) {
    failed = true;
    console.error(`operations never called: ${missed.join(', ')}`);
  } else {
    console.log(`every documented operation called (${documented.join(', ')})`);
  }
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : err);
} finally {
  await server.stop();
}
process.exitCode = failed ? 1 : 0;
