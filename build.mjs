// Builds dist/petstore.js: one ESM bundle for Node 20 and later with no runtime dependencies.
// With --tests, also transpiles src/ and test/ file by file into build/ for `node --test`.
// With --prepare (npm's `prepare`, run on `npm ci`, `npm pack` and installs from git or a
// path): when the build tools (the devDependencies) are not installed, keep a dist/ that is
// already built, or fail saying what to run, instead of a bare ERR_MODULE_NOT_FOUND.
import { chmodSync, existsSync, readdirSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '');
process.chdir(root);

let build;
try {
  ({ build } = await import('esbuild'));
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  if (process.argv.includes('--prepare') && existsSync('dist/petstore.js') && existsSync('dist/petstore.d.ts')) {
    process.stderr.write(`petstore: the build tools are not installed in ${root}; using the dist/ built there before\n`);
    process.exit(0);
  }
  process.stderr.write([
    `petstore: cannot build dist/petstore.js: the build tools (esbuild, typescript: the devDependencies) are not installed in ${root}.`,
    `Run \`npm ci\` in ${root} first (it installs them and builds dist/), then run this again.`,
    'To install petstore without building: `npm pack` in a built clone makes a tarball with dist/, and `npm install ./petstore-VERSION.tgz` installs it.',
    '',
  ].join('\n'));
  process.exit(1);
}

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return ['bench', 'tools', 'node_modules'].includes(e.name) ? [] : tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

// --no-bundle (npm run test:unit): only the test build below; dist/ is left as it is.
const bundle = !process.argv.includes('--no-bundle');
if (bundle) {
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
}

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
