// Builds dist/petstore.js: one ESM bundle for Node 20 with no runtime dependencies.
// With --tests, also transpiles src/ and test/ file by file into build/ for `node --test`.
import { build } from 'esbuild';
import { chmodSync, readdirSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return ['bench', 'tools', 'node_modules'].includes(e.name) ? [] : tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

await build({
  entryPoints: ['src/petstore.ts'],
  outfile: 'dist/petstore.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: false,
  legalComments: 'none',
  define: { __PETSTORE_VERSION__: JSON.stringify(pkg.version) },
  banner: { js: '#!/usr/bin/env node' },
  // Optional peer dependencies (the shared backends' drivers), imported only when their URL is
  // given: never bundled.
  external: ['postgres', 'ioredis'],
  logLevel: 'warning',
});
// The bundle starts with a shebang, so it is a command: ./dist/petstore.js runs it.
chmodSync('dist/petstore.js', 0o755);

// Declarations beside the bundle, so TypeScript embedders get checked options and handle.
rmSync('dist/types', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [
  'node_modules/typescript/bin/tsc', 'src/petstore.ts', 'src/globals.d.ts', '--declaration', '--emitDeclarationOnly',
  '--outDir', 'dist/types', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
  '--strict', '--skipLibCheck', '--types', 'node', '--resolveJsonModule', '--ignoreConfig', '--rootDir', '.',
], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
writeFileSync('dist/petstore.d.ts', "export * from './types/src/petstore.js';\n");

if (process.argv.includes('--tests')) {
  rmSync('build', { recursive: true, force: true });
  await build({
    entryPoints: [...tsFiles('src'), ...tsFiles('test')],
    outdir: 'build',
    outbase: '.',
    bundle: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    define: { __PETSTORE_VERSION__: JSON.stringify(pkg.version) },
    logLevel: 'warning',
  });
}
