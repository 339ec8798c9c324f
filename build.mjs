// Builds dist/petstore.js: one ESM bundle for Node 20 with no runtime dependencies.
// With --tests, also transpiles src/ and test/ file by file into build/ for `node --test`.
import { build } from 'esbuild';
import { readdirSync, rmSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'bench' ? [] : tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/petstore.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: false,
  legalComments: 'none',
  define: { __PETSTORE_VERSION__: JSON.stringify(pkg.version) },
  banner: { js: '#!/usr/bin/env node' },
  logLevel: 'warning',
});

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
