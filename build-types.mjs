// One declaration file for the public API (dist/petstore.d.ts), made from the per-file
// declarations tsc emits: from the names src/petstore.ts exports, every declaration they use,
// and only those, in one module, with no import. So an embedder's TypeScript needs nothing
// else: no internal .d.ts files shipped, and no @types/node (the build fails if a Node type,
// or an import of any module, would be needed).
//
// tsc's declaration output is regular: one top-level statement per line at column 0, its
// continuation indented (or a closing bracket at column 0), its doc comment just above it.
// That is all this reads; anything else fails the build with the file and line.
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

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
  throw new Error(`build-types: ${why} (${s.file}:${s.line}: ${s.lines[0]})`);
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
export function bundleDeclarations(typesDir, entry, header) {
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
  if (/from '|require\(/.test(body.replace(/\/\*[\s\S]*?\*\//g, ''))) throw new Error('build-types: an import is left in the bundled declarations');
  return `${header}${body}\nexport {};\n`;
}
