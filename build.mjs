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
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// ---- One declaration file for the public API ----
// One declaration file for the public API (dist/petstore.d.ts), made from the per-file
// declarations tsc emits: from the names src/petstore.ts exports, every declaration they use,
// and only those, in one module, with no import. So an embedder's TypeScript needs nothing
// else: no internal .d.ts files shipped, and no @types/node (the build fails if a Node type,
// or an import of any module, would be needed).
//
// tsc's declaration output is regular: one top-level statement per line at column 0, its
// continuation indented (or a closing bracket at column 0), its doc comment just above it.
// That is all this reads; anything else fails the build with the file and line.
const IDENT = /[A-Za-z_$][\w$]*/g;
const DECLARATION = /^(export\s+)?(default\s+)?(declare\s+)?(abstract\s+)?(function|class|interface|type|const|let|var|enum|namespace)\s+([A-Za-z_$][\w$]*)/;

/** The top-level statements of a declaration file, each with the doc comment above it. */
function statements(file) {
  const out = [];
  let comment = [];
  let current;
  const lines = readFileSync(file, 'utf8').split('\n');
  let inComment = false;
  lines.forEach((line, i) => {
    if (inComment) {
      comment.push(line);
      inComment = !/\*\//.test(line);
      return;
    }
    if (/^\/\*/.test(line)) {
      current = undefined;
      comment.push(line);
      inComment = !/\*\//.test(line);
      return;
    }
    if (line === '' || /^\/\//.test(line)) return;
    if (/^[\s})\]|&]/.test(line) && current !== undefined) {
      current.lines.push(line);
      return;
    }
    current = { file, line: i + 1, comment, lines: [line] };
    comment = [];
    out.push(current);
  });
  return out.map((s) => ({ ...s, text: s.lines.join('\n') }));
}

function fail(s, why) {
  throw new Error(`declarations: ${why} (${s.file}:${s.line}: ${s.lines[0]})`);
}

/** `{ a, type b, c as d }` -> [[imported, local]] */
function names(list) {
  return list.split(',').map((p) => p.trim().replace(/^type\s+/, '')).filter((p) => p !== '').map((p) => {
    const [from, as] = p.split(/\s+as\s+/);
    return [from, as ?? from];
  });
}

/** Parses one emitted file: its imports, re-exports and declarations. */
function parse(file, cache) {
  if (cache.has(file)) return cache.get(file);
  const mod = { file, imports: new Map(), reexports: new Map(), star: [], decls: new Map(), localExports: new Map() };
  cache.set(file, mod);
  for (const s of statements(file)) {
    const flat = s.text.replace(/\s+/g, ' ');
    let m;
    if ((m = /^import (?:type )?\{([^}]*)\} from '([^']+)';$/.exec(flat))) {
      for (const [imported, local] of names(m[1])) mod.imports.set(local, { spec: m[2], name: imported, s });
    } else if ((m = /^export (?:type )?\{([^}]*)\} from '([^']+)';$/.exec(flat))) {
      for (const [imported, exported] of names(m[1])) mod.reexports.set(exported, { spec: m[2], name: imported, s });
    } else if ((m = /^export \* from '([^']+)';$/.exec(flat))) {
      mod.star.push({ spec: m[1], s });
    } else if ((m = /^export (?:type )?\{([^}]*)\};$/.exec(flat))) {
      for (const [local, exported] of names(m[1])) mod.localExports.set(exported, local);
    } else if ((m = DECLARATION.exec(flat))) {
      const name = m[6];
      const list = mod.decls.get(name) ?? [];
      list.push(s);
      mod.decls.set(name, list);
      if (m[1]) mod.localExports.set(name, name);
    } else if (flat === 'export {};') {
      // a module with nothing to export
    } else {
      fail(s, 'a statement this reader does not know');
    }
  }
  return mod;
}

function resolveSpec(from, spec, s) {
  if (!spec.startsWith('.')) fail(s, `the public API uses a type from '${spec}'`);
  return join(dirname(from), spec.replace(/\.js$/, '.d.ts'));
}

/**
 * Bundles the declarations under `typesDir` reachable from `entry` (a .d.ts there) into one
 * module's text. `header` goes first.
 */
function bundleDeclarations(typesDir, entry, header) {
  const cache = new Map();
  /** key "file#name" -> { name (final), file, local, stmts } */
  const included = new Map();
  const finalNames = new Map(); // final name -> key
  const queue = [];

  /** Finds where `name`, as `mod` sees it (a local or imported name), is declared. */
  function locate(mod, name, s, seen = new Set()) {
    const key = `${mod.file}#${name}`;
    if (seen.has(key)) fail(s, `a cycle of re-exports for ${name}`);
    seen.add(key);
    if (mod.decls.has(name)) return { mod, local: name };
    const imp = mod.imports.get(name);
    if (imp) return exported(parse(resolveSpec(mod.file, imp.spec, imp.s), cache), imp.name, imp.s, seen);
    return undefined;
  }
  /** Finds where the name `mod` exports as `name` is declared. */
  function exported(mod, name, s, seen = new Set()) {
    const local = mod.localExports.get(name);
    if (local !== undefined) return locate(mod, local, s, seen);
    const re = mod.reexports.get(name);
    if (re) return exported(parse(resolveSpec(mod.file, re.spec, re.s), cache), re.name, re.s, seen);
    for (const star of mod.star) {
      const target = parse(resolveSpec(mod.file, star.spec, star.s), cache);
      try {
        const found = exported(target, name, s, new Set(seen));
        if (found) return found;
      } catch {
        // not there
      }
    }
    fail(s, `${relative(typesDir, mod.file)} does not export ${name}`);
  }
  function include(found, wanted, s) {
    const key = `${found.mod.file}#${found.local}`;
    const had = included.get(key);
    if (had) return had.name;
    let name = wanted ?? found.local;
    if (finalNames.has(name)) {
      if (wanted !== undefined) fail(s, `the public name ${name} is taken`);
      let n = 2;
      while (finalNames.has(`${name}${n}`)) n++;
      name = `${name}${n}`;
    }
    const entryInfo = { name, mod: found.mod, local: found.local, stmts: found.mod.decls.get(found.local), exported: wanted !== undefined };
    included.set(key, entryInfo);
    finalNames.set(name, key);
    queue.push(entryInfo);
    return name;
  }

  const root = parse(join(typesDir, entry), cache);
  const publicNames = [...root.reexports.keys(), ...root.localExports.keys()];
  for (const name of publicNames) include(exported(root, name, root.reexports.get(name)?.s ?? { file: root.file, line: 0, lines: [name] }), name);

  const rendered = [];
  while (queue.length > 0) {
    const item = queue.shift();
    const parts = item.stmts.map((s) => {
      // Strip comments and strings before looking for the names a declaration uses.
      const code = s.text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/.*$/gm, ' ').replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
      if (/\bimport\(/.test(code)) fail(s, 'an inline import() type');
      const renames = new Map();
      for (const ident of new Set(code.match(IDENT) ?? [])) {
        if (ident === item.local) continue;
        if (ident === 'Buffer' || ident === 'NodeJS') fail(s, `the public API uses ${ident} (a Node type)`);
        const found = item.mod.decls.has(ident) || item.mod.imports.has(ident) ? locate(item.mod, ident, s) : undefined;
        if (found === undefined) continue;
        const finalName = include(found, undefined, s);
        if (finalName !== ident) renames.set(ident, finalName);
      }
      let text = s.text;
      if (item.name !== item.local) renames.set(item.local, item.name);
      for (const [from, to] of renames) text = text.replace(new RegExp(`(?<![\\w$.'"])${from.replace(/\$/g, '\\$')}(?![\\w$'"])`, 'g'), to);
      // Exported names keep `export`; the others are declarations of this module only.
      text = text.replace(/^export\s+/, '');
      if (item.exported) text = `export ${text}`;
      return [...s.comment, text].join('\n');
    });
    rendered.push(parts.join('\n'));
  }
  const body = rendered.join('\n');
  if (/from '|require\(/.test(body.replace(/\/\*[\s\S]*?\*\//g, ''))) throw new Error('declarations: an import is left in the bundled declarations');
  return `${header}${body}\nexport {};\n`;
}

// ---- The build ----
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
  const syntax = /^\s*(import\s*[\w{*]|export\s*(?:[{*]|(?:default|const|let|var|function|class|async)\b))|import\.meta/m.exec(text);
  if (syntax) throw new Error(`dist/petstore.js must have no import or export statement and no import.meta: ${syntax[0]}`);
  const loaded = Object.keys(createRequire(import.meta.url)('./dist/petstore.js')).sort();
  if (loaded.join() !== [...names].sort().join()) throw new Error(`dist/petstore.js exports ${loaded.join()}, src/petstore.ts ${names.join()}`);
  // The bundle starts with a shebang, so it is a command: ./dist/petstore.js runs it.
  chmodSync('dist/petstore.js', 0o755);

  // One declaration file beside the bundle, so TypeScript embedders get checked options and
  // handle (bundleDeclarations above): tsc's per-file declarations go to a temporary folder, and only
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
