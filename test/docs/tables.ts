// The reference tables of docs/ that the code also holds, generated from the code's own
// tables: config fields (src/config/fields.ts), command-line options and environment
// variables (src/cli/flags.ts), routes (src/api/routes.ts, src/admin/admin-routes.ts), the phases of
// each route (phaseTable of src/http/lifecycle.ts) and what each step does (PHASES, OUTBOUND), error codes (src/core/errors.ts) and
// metrics families (a snapshot of src/metrics' registry). A page holds each between markers:
//
//   <!-- generated:config-fields -->
//   ...the table...
//   <!-- /generated -->
//
// `npm run docs` rewrites them; test/docs/tables.test.ts fails when a page differs from what
// this would write. Pages under docs/_incoming/ (notes waiting to be folded in) are skipped.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ADMIN_ROUTES, Faults, RequestJournal } from '../../src/admin/index.js';
import { ROUTES, openApiRoute } from '../../src/api/index.js';
import { CLI_OPTIONS } from '../../src/cli/flags.js';
import { CONFIG_FIELDS, type ConfigField } from '../../src/config/fields.js';
import { ManualClock } from '../../src/core/clock.js';
import { ERROR_CODES } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/log.js';
import type { AppDeps } from '../../src/http/exchange.js';
import { PHASES, phaseTable } from '../../src/http/lifecycle.js';
import { OUTBOUND } from '../../src/http/outbound.js';
import { parseConfig, type Config } from '../../src/config/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import { openMemoryStore } from '../../src/store/index.js';
import { ServiceMetrics, type Family } from '../../src/metrics/index.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** README.md and docs/*.md, as paths relative to the root; docs/_incoming/ is not a page. */
export function pages(root = ROOT): string[] {
  const docs = readdirSync(join(root, 'docs'), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => `docs/${e.name}`)
    .sort();
  return ['README.md', ...docs];
}

/** A table cell: pipes escaped (also inside code spans, as GitHub's tables need), one line. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function table(head: readonly string[], rows: readonly (readonly string[])[], align?: readonly string[]): string {
  const lines = [`| ${head.join(' | ')} |`, `|${(align ?? head.map(() => '---')).join('|')}|`];
  for (const row of rows) lines.push(`| ${row.map(cell).join(' | ')} |`);
  return lines.join('\n');
}

function configFields(): string {
  const rows = Object.entries(CONFIG_FIELDS).map(([name, f]: [string, ConfigField]) => {
    const value = f.default === undefined ? undefined : `\`${JSON.stringify(f.default)}\``;
    const def = value === undefined ? (f.defaultNote ?? 'none') : f.defaultNote === undefined ? value : `${value} (${f.defaultNote})`;
    return [`\`${name}\``, def, f.applied === 'reload' ? 'reload' : 'restart', f.meaning];
  });
  return table(['field', 'default', 'applied at', 'meaning'], rows);
}

function cliOptions(): string {
  const rows = CLI_OPTIONS.map((o) => {
    const flag = o.flag === undefined ? '' : `\`${o.short === undefined ? '' : `-${o.short}, `}--${o.flag}${o.arg === undefined ? '' : ` ${o.arg}`}\``;
    return [flag, o.env === undefined ? '' : `\`${o.env}\``, o.default ?? '', o.meaning];
  });
  return table(['flag', 'environment', 'default', 'meaning'], rows);
}

function errorCodes(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(([code, e], i) => ({ code, status: e.status, summary: e.summary, i }))
    .sort((a, b) => a.status - b.status || a.i - b.i)
    .map((e) => [`\`${e.code}\``, String(e.status), e.summary]);
  return table(['code', 'status', 'meaning'], rows, ['---', '---:', '---']);
}

/**
 * Every family the registry exposes, from three snapshots: a bare service, one whose store
 * counts its pets (memory and data file stores), and one with a data file's figures.
 */
function metricsFamilies(): string {
  const snapshot = (stage: number): readonly Family[] => {
    const m = new ServiceMetrics({ operations: ['listPets'], version: '0.0.0' });
    m.request('listPets', 200, 1);
    m.refused('rate_limited');
    m.unauthorized('missing_key');
    if (stage >= 1) m.petsStored = () => 0;
    if (stage >= 2) {
      m.store.batchWritten(1, 0.001);
      m.store.journalBytes(0);
      m.store.compacted(true);
    }
    const families = m.snapshot().families;
    m.close();
    return families;
  };
  const seen = new Map<string, { family: Family; stage: number }>();
  for (const stage of [0, 1, 2]) for (const family of snapshot(stage)) if (!seen.has(family.name)) seen.set(family.name, { family, stage });
  const when = ['always', 'memory and data file stores', 'data file store'];
  const rows = [...seen.values()].map(({ family, stage }) => {
    const labels = new Set<string>();
    for (const s of family.samples) for (const l of Object.keys(s.labels)) labels.add(l);
    const merge = family.type === 'gauge' ? family.merge : 'sum';
    return [`\`${family.name}\``, family.type, [...labels].map((l) => `\`${l}\``).join(', '), when[stage] as string, merge, family.help];
  });
  return table(['family', 'type', 'labels', 'present', 'across workers', 'help'], rows);
}

/** The API's operations (the route table and the OpenAPI route), then the admin ones. */
function routes(): string {
  const access = { key: 'API key', optional: 'optional key', none: 'none' } as const;
  const rows = [...ROUTES, openApiRoute(ROUTES, '0.0.0')].map((r) => [r.method, `\`/v1${r.path}\``, `\`${r.operationId}\``, access[r.auth], r.summary ?? '']);
  for (const r of ADMIN_ROUTES) rows.push([r.method, `\`/__admin${r.path}\``, `\`${r.operationId}\``, 'admin key', 'for test harnesses: see [harness](harness.md#admin-endpoints)']);
  return table(['method', 'path', 'operationId', 'access', 'summary'], rows);
}

/**
 * The phases each route gets (src/http/lifecycle.ts, phaseTable) and its steps after the
 * handler (src/http/outbound.ts), with every feature off (access log on, as by default) and
 * with CORS, metrics and an admin key on: the app builds its routes from the same functions.
 */
function phases(): string {
  const key = { key: 'docs-table-key-0123456789abcdef', plan: 'free', name: 'docs' };
  const plain = parseConfig({ keys: [key] }, 'docs', '/');
  const full = parseConfig({ keys: [key], metrics: true, cors: { origins: ['*'] }, admin: { key: 'docs-admin-key-0123456789abcdef' } }, 'docs', '/');
  const store = openMemoryStore();
  const clock = new ManualClock();
  const routes = [...ROUTES, openApiRoute(ROUTES, '0.0.0')];
  // Nothing is logged while the table is made: a logger that would write info lines, as the default level does.
  const logger = { log() {}, enabled: () => true };
  const list = (config: Config, metrics: ServiceMetrics | undefined): Map<string, { phases: string; outbound: string }> => {
    const deps: AppDeps = {
      store, clock, logger, config: () => config, publicBase: undefined, routes, metrics,
      keyLimiter: new MemoryLimiter({ clock, ban: config.ban }),
      addressLimiter: new MemoryLimiter({ clock, ban: config.ban }),
      // The phases depend on whether an admin key is configured, not on what the admin
      // operations do: these answer nothing, and are never called while the table is made.
      admin: {
        reset: () => store.reset(), seed: (pets) => store.seed(pets), faults: new Faults(),
        journal: { query: () => Promise.resolve({ records: [], dropped: 0 }), count: () => Promise.resolve(0), wait: () => Promise.resolve({ count: 0, met: false, waitedMs: 0 }), clear: () => Promise.resolve() },
        clock: { now: () => clock.now(), offsetMs: 0, advance: (ms) => Promise.resolve(clock.advance(ms)) },
        snapshots: 'not needed for the phase table',
      },
      // The journal's step depends only on there being one (as with an admin key).
      ...(config.admin === undefined ? {} : { journal: new RequestJournal(1) }),
    };
    const name = (method: string, path: string): string =>
      method === '(other)' ? `another method on \`${path}\` (405)` : path === '(any other path)' ? 'a path in no route (404)' : method === '*' ? `\`${path}\` in no admin route (404)` : `${method} \`${path}\``;
    return new Map(phaseTable(deps, config).map((r) => [name(r.method, r.path), { phases: r.phases.join(', '), outbound: r.outbound.join(', ') }]));
  };
  const off = list(plain, undefined);
  const metrics = new ServiceMetrics({ operations: routes.map((r) => r.operationId), version: '0.0.0' });
  const on = list(full, metrics);
  metrics.close();
  const order = (route: string): number => (route.startsWith('another') ? 1 : route.endsWith('(404)') ? 2 : 0);
  const none = '(no route)';
  const rows = [...new Set([...off.keys(), ...on.keys()])].sort((a, b) => order(a) - order(b)).map((route) => {
    const a = off.get(route);
    const b = on.get(route);
    return [route, a?.phases ?? none, a?.outbound ?? none, b?.phases ?? none, b?.outbound ?? none];
  });
  return table(['route', 'default config: phases', 'after the handler', 'CORS, metrics, an admin key: phases', 'after the handler'], rows);
}

/** What each phase answers and each step after the handler does (PHASES and OUTBOUND), in the order they run. */
function lifecycleSteps(): string {
  const rows = [
    ...PHASES.map((p) => [`\`${p.name}\``, 'phase', p.does]),
    ...OUTBOUND.map((o) => [`\`${o.name}\``, 'after the handler', o.does]),
  ];
  return table(['step', 'runs', 'answers or does'], rows);
}

/** Each generated table by the name its markers carry. */
export const TABLES: Readonly<Record<string, () => string>> = {
  'config-fields': configFields,
  'cli-options': cliOptions,
  'error-codes': errorCodes,
  'metrics-families': metricsFamilies,
  routes,
  phases,
  'lifecycle-steps': lifecycleSteps,
};

const BLOCK = /(<!-- generated:([a-z-]+) -->\n)([\s\S]*?)(<!-- \/generated -->)/g;

/** The page with every generated block rewritten; throws on a block of an unknown table. */
export function render(text: string, where = 'page'): string {
  return text.replace(BLOCK, (_all, open: string, name: string, _old: string, close: string) => {
    const make = TABLES[name];
    if (make === undefined) throw new Error(`${where}: no generated table named "${name}" (known: ${Object.keys(TABLES).join(', ')})`);
    return `${open}${make()}\n${close}`;
  });
}

/** The names of the generated blocks a page holds. */
export function blocks(text: string): string[] {
  return [...text.matchAll(BLOCK)].map((m) => m[2] as string);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  let changed = 0;
  for (const page of pages()) {
    const path = join(ROOT, page);
    const text = readFileSync(path, 'utf8');
    const next = render(text, page);
    if (next !== text) {
      writeFileSync(path, next);
      changed++;
      console.log(`docs: rewrote the generated tables of ${page}`);
    }
  }
  console.log(changed === 0 ? 'docs: every generated table is up to date' : `docs: ${changed} page(s) rewritten`);
}
