// The library's types as an embedder meets them: a TypeScript file compiled against
// dist/petstore.d.ts, in a project without @types/node and with every declaration checked.
// Typed options compile; a misspelt or mistyped config field does not. The declaration is one
// file: nothing of the internals is shipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from '../support/bundle.js';

const LIB = JSON.stringify(join(ROOT, 'dist', 'petstore.js'));

const GOOD = `
import { startPetstore, StartError, ConfigError, ManualClock } from ${LIB};
import type { PetstoreConfig, KeyConfig, StartOptions, PetstoreHandle, StartErrorKind, JournalPage, JournalRequest, HarnessClock } from ${LIB};
const keys: KeyConfig[] = [
  { key: 'k1', plan: 'free', name: 'demo' },
  { sha256: '544b6db1a6d3ca2f8ef0ce81a9a12c26c24033cda74a69696246c8078f1b158c', plan: 'pro' },
  { key: 'k2', plan: 'enterprise', limits: { perMinute: 5000, perDay: 2000000 } },
];
const config: PetstoreConfig = {
  host: '127.0.0.1', port: 0, dataFile: null, keys, plans: { free: { perMinute: 60, perDay: 1000 } },
  ban: { after: 20, seconds: 300 }, anonymous: { perMinute: 30, perDay: 500 }, trustProxy: true,
  cors: { origins: ['*'] }, logLevel: 'warn', environments: { production: 'https://api.example.com/v1' },
};
const options: StartOptions = { port: 0, config, clock: new ManualClock(), logger: (level, msg) => void [level, msg] };
export async function run(): Promise<string> {
  try {
    const handle: PetstoreHandle = await startPetstore(options);
    await handle.reload({ keys: [{ key: 'k3', plan: 'free' }] });
    const clock: HarnessClock = handle.clock;
    clock.advance(60_000);
    const offset: number = clock.offsetMs + clock.now();
    const page: JournalPage = await handle.journal({ method: 'GET', path: '/v1/pets', status: 200, key: 'demo', limit: 10 });
    const first: JournalRequest | undefined = page.requests[0];
    const saved: { name: string; pets: number } = await handle.snapshot('base');
    await handle.restore(saved.name);
    void [offset, first?.requestId, first?.status];
    await handle.close();
    return handle.url;
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join(', ');
    if (err instanceof StartError) { const kind: StartErrorKind = err.kind; return kind; }
    throw err;
  }
}
`;

const BAD: Record<string, string> = {
  misspelt: `startPetstore({ config: { kyes: [] } });`,
  'both key and digest': `startPetstore({ config: { keys: [{ key: 'a', sha256: 'b', plan: 'free' }] } });`,
  'log level': `startPetstore({ config: { logLevel: 'verbose' } });`,
  'limits type': `startPetstore({ config: { plans: { free: { perMinute: '60', perDay: 1000 } } } });`,
  'reload misspelt': `startPetstore().then((h) => h.reload({ ban: { after: 1, secs: 2 } }));`,
  'journal filter type': `startPetstore().then((h) => h.journal({ status: '200' }));`,
  'journal filter misspelt': `startPetstore().then((h) => h.journal({ methd: 'GET' }));`,
  'snapshot name type': `startPetstore().then((h) => h.snapshot(1));`,
};

test('typed options compile against dist/petstore.d.ts; misspelt or mistyped config fields do not', { timeout: 120_000 }, () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'package.json'), '{"type": "module"}');
  writeFileSync(join(dir, 'good.ts'), GOOD);
  const files = ['good.ts'];
  Object.entries(BAD).forEach(([name, code], i) => {
    const file = `bad${i}.ts`;
    writeFileSync(join(dir, file), `// ${name}\nimport { startPetstore } from ${LIB};\n${code}\n`);
    files.push(file);
  });
  // A consumer without @types/node (no node_modules anywhere above a temp folder), checking
  // every declaration file it sees (skipLibCheck off), with only the language's own library.
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022'], types: [], skipLibCheck: false },
    files,
  }));
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir, encoding: 'utf8' });
  const out = tsc.stdout + tsc.stderr;
  const errorsOf = (file: string): string[] => out.split('\n').filter((l) => l.startsWith(`${file}(`));
  assert.deepEqual(errorsOf('good.ts'), [], out);
  Object.keys(BAD).forEach((name, i) => assert.ok(errorsOf(`bad${i}.ts`).length > 0, `${name} must not compile:\n${out}`));
  assert.match(errorsOf('bad0.ts').join('\n'), /'kyes' does not exist/);
  assert.match(errorsOf('bad4.ts').join('\n'), /'secs' does not exist/);
  assert.equal(out.split('\n').filter((l) => /error TS/.test(l) && !/^bad\d\.ts\(/.test(l)).length, 0, `no other errors:\n${out}`);
});

test('dist/ holds the bundle, its package.json and one declaration file that imports nothing and names no Node type', () => {
  assert.deepEqual(readdirSync(join(ROOT, 'dist')).sort(), ['package.json', 'petstore.d.ts', 'petstore.js']);
  const dts = readFileSync(join(ROOT, 'dist', 'petstore.d.ts'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  assert.doesNotMatch(dts, /\bimport\b|\brequire\(|from '/);
  assert.doesNotMatch(dts, /\bBuffer\b|\bNodeJS\b/);
});
