// Builds dist/petstore.js: one bundle for Node 20 and later with no runtime dependencies, that
// node runs the same whatever package.json is nearest to it (see the bundle's build below).
// With --tests, also transpiles src/ and test/ file by file into build/ for `node --test`.
// With --prepare (npm's `prepare`, run on `npm ci`, `npm pack` and installs from git or a
// path): when the build tools (the devDependencies) are not installed, keep a dist/ that is
// already built, or fail saying what to run, instead of a bare ERR_MODULE_NOT_FOUND.
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleDeclarations } from './build-types.mjs';

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

// The bundle has no import or export statement, so node runs it the same in any folder, whatever
// package.json is nearest: none, one without "type" (node would warn at every start of an ES
// module there: MODULE_TYPELESS_PACKAGE_JSON), "type": "commonjs" (an ES module would not load:
// "Cannot use import statement outside a module") or "type": "module". An immediately invoked
// function holds it; Node's built-in modules come from process.getBuiltinModule (Node 20.16
// and later), which works in CommonJS and in an ES module alike, and the optional drivers from
// import(), which does too. Loaded as CommonJS (dist/package.json says so, inside the package),
// it sets module.exports, one `exports.NAME =` per name so that node finds the names when an ES
// module imports it (`import { startPetstore } from 'petstore'`); run as an ES module (copied
// alone into a "type": "module" folder) it exports nothing, and runs the command all the same.
/** The names each built-in module is imported with in src/ (`import { a, type B } from 'node:x'`). */
function builtinImports() {
  const used = new Map();
  for (const file of tsFiles('src')) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^import\s+(?!type\s)(?:[\w$]+\s*,\s*)?(?:\{([^}]*)\}\s*)?from\s+'(node:[^']+)'/gm)) {
      const names = used.get(m[2]) ?? new Set();
      for (const part of (m[1] ?? '').split(',')) {
        const name = part.trim().split(/\s+as\s+/)[0];
        if (name !== '' && !name.startsWith('type ')) names.add(name);
      }
      used.set(m[2], names);
    }
  }
  return used;
}

const builtins = {
  name: 'builtins',
  setup(b) {
    const used = builtinImports();
    b.onResolve({ filter: /^node:/ }, (a) => ({ path: a.path, namespace: 'builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (a) => {
      const names = [...(used.get(a.path) ?? [])];
      return {
        contents: `const m = process.getBuiltinModule(${JSON.stringify(a.path)});\nexport default m;\n${names.length > 0 ? `export const { ${names.join(', ')} } = m;\n` : ''}`,
        loader: 'js',
      };
    });
  },
};

/** The names src/petstore.ts exports as values (its `export { ... } from` lines, not types). */
function exportedNames() {
  const text = readFileSync('src/petstore.ts', 'utf8');
  return [...text.matchAll(/^export \{([^}]*)\} from /gm)].flatMap((m) => m[1].split(',').map((n) => n.trim()).filter((n) => n !== '' && !n.startsWith('type ')));
}

if (bundle) {
  const names = exportedNames();
  await build({
    entryPoints: ['src/petstore.ts'],
    outfile: 'dist/petstore.js',
    bundle: true,
    platform: 'node',
    format: 'iife',
    globalName: '__petstore',
    target: 'node20',
    sourcemap: false,
    legalComments: 'none',
    define: { __PETSTORE_VERSION__: JSON.stringify(pkg.version) },
    banner: { js: '#!/usr/bin/env node' },
    footer: {
      js: [
        'if (typeof module === "object" && module !== null && typeof exports === "object") {',
        ...names.map((n) => `  exports.${n} = __petstore.${n};`),
        '}',
      ].join('\n'),
    },
    plugins: [builtins],
    // Optional peer dependencies (the shared backends' drivers), imported only when their URL is
    // given: never bundled.
    external: ['postgres', 'ioredis'],
    logLevel: 'warning',
  });
  // Inside the package (and a copy of dist/), the bundle is CommonJS whatever the package's own
  // "type" (the sources and tests are ES modules).
  writeFileSync('dist/package.json', '{\n  "type": "commonjs"\n}\n');
  const text = readFileSync('dist/petstore.js', 'utf8');
  const syntax = /^\s*(import\s*[\w{*]|export\s)|import\.meta/m.exec(text);
  if (syntax) throw new Error(`dist/petstore.js must have no import or export statement and no import.meta: ${syntax[0]}`);
  const loaded = Object.keys(createRequire(import.meta.url)('./dist/petstore.js')).sort();
  if (loaded.join() !== [...names].sort().join()) throw new Error(`dist/petstore.js exports ${loaded.join()}, src/petstore.ts ${names.join()}`);
  // The bundle starts with a shebang, so it is a command: ./dist/petstore.js runs it.
  chmodSync('dist/petstore.js', 0o755);

  // One declaration file beside the bundle, so TypeScript embedders get checked options and
  // handle (build-types.mjs): tsc's per-file declarations go to a temporary folder, and only
  // what the public API uses is kept.
  rmSync('dist/types', { recursive: true, force: true });
  const typesDir = mkdtempSync(join(tmpdir(), 'petstore-types-'));
  try {
    const tsc = spawnSync(process.execPath, [
      'node_modules/typescript/bin/tsc', 'src/petstore.ts', 'src/globals.d.ts', '--declaration', '--emitDeclarationOnly',
      '--outDir', typesDir, '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
      '--strict', '--skipLibCheck', '--types', 'node', '--resolveJsonModule', '--ignoreConfig', '--rootDir', 'src',
    ], { stdio: 'inherit' });
    if (tsc.status !== 0) process.exit(tsc.status ?? 1);
    writeFileSync('dist/petstore.d.ts', bundleDeclarations(typesDir, 'petstore.d.ts',
      `// petstore ${pkg.version}: the types of startPetstore and what it takes and gives. Made by build.mjs.\n`));
  } finally {
    rmSync(typesDir, { recursive: true, force: true });
  }
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
