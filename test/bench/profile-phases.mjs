// A CPU profile's time by phase of the request lifecycle (src/http/lifecycle.ts and
// outbound.ts), petstore beside the ceiling: profile.mjs prints this table after its table by
// source file, and it can be run on kept profiles:
//
//   node profile-phases.mjs [results/profile]       # the list-*.cpuprofile and get-*.cpuprofile there
//
// A sample belongs to the innermost function on its stack that starts a phase (the table
// below): the phase's own code and everything it calls (the limiter under charge, the store
// and JSON under handler, node's header checks under writeHead). Samples with none of these
// on their stack are node's own work around a request (reading the socket, the HTTP parser,
// building req and res, the deferred socket write, finishing the response), grouped as
// profile.mjs groups self time. Inlined functions count as their own frames (V8 reports
// them so), which makes the attribution exact up to the sampling.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Functions that start a phase, as `source file:function` (esbuild's renamed duplicates, such
// as send2, are matched by their source name), and the phase they start. An anonymous function
// is named by the top-level function it is written in (the closures deprecationOf and
// handlerOf return).
const OURS = new Map([
  ['http/connection/turns.ts:takeTurns', 'in: connection turns (turns.ts)'],
  ['http/connection/turns.ts:handle', 'in: connection turns (turns.ts)'],
  ['http/lifecycle.ts:listener', 'in: set-up (config, Exchange, request id)'],
  ['http/lifecycle.ts:dispatch', 'in: frame checks'],
  ['http/router.ts:match', 'in: route match'],
  ['http/lifecycle.ts:run', 'in: phase runner'],
  ['http/lifecycle.ts:journal', 'phase: journal'],
  ['http/lifecycle.ts:deprecationOf', 'phase: deprecation'],
  ['http/lifecycle.ts:cors', 'phase: cors'],
  ['http/lifecycle.ts:corsOrPreflightOf', 'phase: cors'],
  ['http/lifecycle.ts:authenticateKey', 'phase: authenticate'],
  ['http/lifecycle.ts:authenticateOptional', 'phase: authenticate'],
  ['http/lifecycle.ts:authenticateAdmin', 'phase: authenticate'],
  ['http/lifecycle.ts:charge', 'phase: charge'],
  ['http/lifecycle.ts:chargeRefused', 'phase: charge'],
  ['http/lifecycle.ts:deny', 'phase: deny'],
  ['http/lifecycle.ts:expect', 'phase: expect'],
  ['http/injected-faults.ts:prefer', 'phase: prefer'],
  ['http/injected-faults.ts:faults', 'phase: faults'],
  ['http/lifecycle.ts:idempotency', 'phase: idempotency'],
  ['http/lifecycle.ts:apiBody', 'phase: body'],
  ['http/lifecycle.ts:adminBody', 'phase: body'],
  ['http/handlers.ts:handlerOf', 'phase: handler'],
  ['http/handlers.ts:answer', 'phase: handler'],
  ['http/failure.ts:fail', 'errors (failure.ts)'],
  ['http/send.ts:sendReply', 'out: send (send.ts, own code)'],
  ['http/send.ts:send', 'out: send (send.ts, own code)'],
  ['http/send.ts:headerList', 'out: head assembly (headerList)'],
  ['http/send.ts:done', 'out: after steps (done)'],
  ['http/outbound.ts:journalStep', 'out: journal record'],
  ['http/outbound.ts:metricsStep', 'out: metrics'],
  ['http/outbound.ts:logStep', 'out: access log'],
  ['server/node-server.ts:writeHeadClosing', 'out: writeHead (node)'],
  // The access log's lines are written once a turn, as one batch (log.ts), after the answers.
  ['core/log.ts:flush', 'out: access log, the batch write'],
]);
// node's functions that a phase calls to answer (only when under a request's listener).
const NODE = new Map([
  ['node:_http_server:writeHead', 'out: writeHead (node)'],
  ['node:_http_outgoing:end', 'out: end (node: body, queue the write)'],
]);
// node's own work around a request, by the function that starts it (anywhere on the stack).
const AROUND = new Map([
  ['node:_http_server:connectionCorkNT', 'node: socket write (uncork, writev)'],
  ['node:_http_server:resOnFinish', 'node: response finished (resOnFinish)'],
  ['node:_http_server:parserOnIncoming', 'node: request objects (parserOnIncoming)'],
  ['node:_http_common:parserOnHeadersComplete', 'node: headers to req (parserOnHeadersComplete)'],
]);
const CEILING = 'ceiling: its handler (match, writeHead, end)';

export const ORDER = [
  'node: read, parse (net, parser)',
  'node: headers to req (parserOnHeadersComplete)',
  'node: request objects (parserOnIncoming)',
  'in: connection turns (turns.ts)',
  'in: set-up (config, Exchange, request id)',
  'in: frame checks',
  'in: route match',
  'in: phase runner',
  'phase: journal', 'phase: deprecation', 'phase: cors', 'phase: authenticate', 'phase: charge', 'phase: deny',
  'phase: expect', 'phase: prefer', 'phase: faults', 'phase: idempotency', 'phase: body', 'phase: handler',
  'errors (failure.ts)',
  CEILING,
  'out: send (send.ts, own code)',
  'out: head assembly (headerList)',
  'out: writeHead (node)',
  'out: end (node: body, queue the write)',
  'out: after steps (done)', 'out: journal record', 'out: metrics', 'out: access log', 'out: access log, the batch write',
  'node: socket write (uncork, writev)',
  'node: response finished (resOnFinish)',
  'node: events, timers, ticks',
  'node: other',
  'GC',
  'VM / native other',
];

/** The names of the top-level functions of a source, by line (for anonymous functions). */
function topLevel(text) {
  const names = [];
  let current;
  for (const line of text.split('\n')) {
    const m = /^(?:export\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)|^(?:export\s+)?(?:const|let)\s+([\w$]+)\s*[:=]|^(?:export\s+)?class\s+([\w$]+)/.exec(line);
    if (m) current = m[1] ?? m[2] ?? m[3];
    names.push(current);
  }
  return names;
}

/** The phase a call frame starts, or undefined when it starts none. */
function makeLabeler(map, bundleUrl) {
  const sources = new Map();
  const sourceOf = (name) => {
    if (!sources.has(name)) {
      const index = map.payload.sources.indexOf(name);
      const text = map.payload.sourcesContent?.[index];
      sources.set(name, text === undefined ? [] : topLevel(text));
    }
    return sources.get(name);
  };
  const cache = new Map();
  return (frame) => {
    const id = `${frame.url}:${frame.functionName}:${frame.lineNumber}:${frame.columnNumber}`;
    if (cache.has(id)) return cache.get(id);
    let label;
    const { url, functionName } = frame;
    if (bundleUrl !== undefined && url === bundleUrl && map !== undefined) {
      const entry = map.findEntry(frame.lineNumber, frame.columnNumber);
      const source = entry?.originalSource;
      if (source !== undefined) {
        const file = source.replace(/^.*?\/src\//, '');
        const name = functionName.replace(/\d+$/, '') || sourceOf(source)[entry.originalLine] || '';
        // Else a closure written inside a phase-starting function (deprecationOf's, handlerOf's).
        label = OURS.get(`${file}:${name}`) ?? OURS.get(`${file}:${sourceOf(source)[entry.originalLine]}`);
      }
    } else if (url.includes('/peers/ceiling')) {
      label = CEILING;
    } else {
      label = AROUND.get(`${url}:${functionName}`) ?? (NODE.has(`${url}:${functionName}`) ? { inside: NODE.get(`${url}:${functionName}`) } : undefined);
    }
    cache.set(id, label);
    return label;
  };
}

const HTTP_FILES = /^node:_http_(server|outgoing|common|incoming)$/;
const NET_FILES = /^node:(net|stream|internal\/stream_base_commons|internal\/streams\/.*|internal\/net|internal\/dtrace)$/;
const EVENT_FILES = /^node:(events|internal\/process\/task_queues|internal\/timers|timers|internal\/async_hooks|internal\/process\/promises)$/;

/** Where a sample with no phase on its stack goes, by its leaf frame. */
function around(frame) {
  const { url, functionName: fn } = frame;
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (fn === '(program)' || fn === '(root)' || url === '') return url === '' && !fn.startsWith('(') ? 'node: read, parse (net, parser)' : 'VM / native other';
  if (HTTP_FILES.test(url) || NET_FILES.test(url)) return 'node: read, parse (net, parser)';
  if (EVENT_FILES.test(url)) return 'node: events, timers, ticks';
  return 'node: other';
}

/**
 * Each sample's weight in µs: its interval to the next sample (DevTools' convention), capped at
 * twice the median interval. On a loaded machine the process waits for a CPU between two
 * samples now and then (intervals of 1 to 300 ms in a run whose median is 0.2 ms), and that
 * wait is not time spent in the frame the next sample happens to land in.
 */
export function sampleWeights(profile) {
  const { timeDeltas } = profile;
  const sorted = [...timeDeltas].sort((a, b) => a - b);
  const cap = 2 * (sorted[sorted.length >> 1] ?? 0);
  return timeDeltas.map((_, i) => (i + 1 < timeDeltas.length ? Math.min(timeDeltas[i + 1], cap) : 0));
}

/** Self time (µs) per phase of one profile. */
export function phaseTimes(profile, map, bundleUrl) {
  const label = makeLabeler(map, bundleUrl);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const phaseOf = new Map();
  const resolve = (id) => {
    if (phaseOf.has(id)) return phaseOf.get(id);
    // The innermost phase-starting frame; node's writeHead and end count only under ours.
    const chain = [];
    for (let at = id; at !== undefined; at = parent.get(at)) chain.push(byId.get(at));
    let found;
    let nodeCall;
    for (const node of chain) {
      const l = label(node.callFrame);
      if (l === undefined) continue;
      if (typeof l === 'object') {
        nodeCall ??= l.inside;
        continue;
      }
      found = nodeCall !== undefined && (l.startsWith('phase') || l.startsWith('out') || l.startsWith('in') || l === CEILING) ? nodeCall : l;
      break;
    }
    const result = found ?? around(byId.get(id).callFrame);
    phaseOf.set(id, result);
    return result;
  };
  const times = new Map();
  const fns = new Map();
  const { samples } = profile;
  const weights = sampleWeights(profile);
  for (let i = 0; i < samples.length; i++) {
    const phase = resolve(samples[i]);
    times.set(phase, (times.get(phase) ?? 0) + weights[i]);
    const frame = byId.get(samples[i]).callFrame;
    const fn = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\//, '') || '(native)'}`;
    let inPhase = fns.get(phase);
    if (inPhase === undefined) fns.set(phase, (inPhase = new Map()));
    inPhase.set(fn, (inPhase.get(fn) ?? 0) + weights[i]);
  }
  return Object.assign(times, { fns });
}

/**
 * The table: per phase, µs per request and share of the busy time for each server, and for
 * petstore the difference to the ceiling. `results` maps a server name to { times, requests }.
 */
export function phaseTable(title, results) {
  const names = [...results.keys()];
  const busy = (r) => [...r.times].reduce((s, [p, us]) => (p === 'idle' ? s : s + us), 0);
  const phases = [...ORDER.filter((p) => names.some((n) => results.get(n).times.has(p))),
    ...new Set(names.flatMap((n) => [...results.get(n).times.keys()]).filter((p) => !ORDER.includes(p) && p !== 'idle'))];
  const ceiling = results.get('ceiling');
  const lines = [`#### ${title}: by phase`, ''];
  lines.push(`| phase | ${names.map((n) => `${n} µs/req | ${n} %`).join(' | ')}${ceiling ? ' | petstore − ceiling µs/req' : ''} |`);
  lines.push(`|---|${names.map(() => '---:|---:').join('|')}${ceiling ? '|---:' : ''}|`);
  const row = (label, get) => {
    const cells = names.map((n) => {
      const r = results.get(n);
      const us = get(r);
      return `${(us / r.requests).toFixed(2)} | ${((100 * us) / busy(r)).toFixed(1)}%`;
    });
    const first = results.get(names[0]);
    const diff = ceiling && names[0] !== 'ceiling' ? ` | ${(get(first) / first.requests - get(ceiling) / ceiling.requests).toFixed(2)}` : ceiling ? ' | ' : '';
    return `| ${label} | ${cells.join(' | ')}${diff} |`;
  };
  for (const p of phases) lines.push(row(p, (r) => r.times.get(p) ?? 0));
  lines.push(row('**busy, all**', busy));
  // With PROFILE_PHASE_TOP=n: each phase's top functions by self time (bundle functions by
  // their bundled name, node's by file), to see what a phase's time is made of.
  const top = Number(process.env.PROFILE_PHASE_TOP ?? 0);
  if (top > 0) {
    lines.push('');
    for (const p of phases) {
      for (const n of names) {
        const r = results.get(n);
        const fns = [...(r.times.fns?.get(p) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, top);
        if (fns.length > 0) lines.push(`- ${p}, ${n}: ${fns.map(([f, us]) => `${f} ${(us / r.requests).toFixed(2)}`).join('; ')}`);
      }
    }
  }
  return lines.join('\n');
}

/**
 * Over several runs (PROFILE_RUNS): per phase, the median share of the busy time and its range
 * for each server, and the median µs per request. Shares hold up on a loaded machine; µs per
 * request move with its speed from one profile to the next, both servers' alike only when
 * they ran at the same speed. `runs` maps a server name to [{ times, requests }, ...].
 */
export function phaseSummary(title, runs) {
  const names = [...runs.keys()];
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const busy = (r) => [...r.times].reduce((s, [p, us]) => (p === 'idle' ? s : s + us), 0);
  const ours = (p) => /^(in|phase|errors|ceiling)|^out: (send|head|after|journal|metrics|access)/.test(p);
  const seen = new Set(names.flatMap((n) => runs.get(n).flatMap((r) => [...r.times.keys()])));
  const phases = [...ORDER.filter((p) => seen.has(p)), ...[...seen].filter((p) => !ORDER.includes(p) && p !== 'idle'), '**our code, all**', '**busy, all**'];
  const value = (r, p) => (p === '**busy, all**' ? busy(r) : p === '**our code, all**' ? [...r.times].filter(([q]) => ours(q)).reduce((s, [, us]) => s + us, 0) : r.times.get(p) ?? 0);
  const count = runs.get(names[0]).length;
  const lines = [`#### ${title}: by phase, ${count} runs`, ''];
  lines.push(`| phase | ${names.map((n) => `${n} % of busy, median (range) | ${n} µs/req, median`).join(' | ')} |`);
  lines.push(`|---|${names.map(() => '---:|---:').join('|')}|`);
  for (const p of phases) {
    const cells = names.map((n) => {
      const shares = runs.get(n).map((r) => (100 * value(r, p)) / busy(r));
      const us = runs.get(n).map((r) => value(r, p) / r.requests);
      return `${median(shares).toFixed(1)}% (${Math.min(...shares).toFixed(1)}-${Math.max(...shares).toFixed(1)}) | ${median(us).toFixed(2)}`;
    });
    lines.push(`| ${p} | ${cells.join(' | ')} |`);
  }
  lines.push('', `Busy µs per request, run by run: ${names.map((n) => `${n} ${runs.get(n).map((r) => (busy(r) / r.requests).toFixed(1)).join(', ')}`).join('; ')}.`);
  return lines.join('\n');
}

// Run on kept profiles: node profile-phases.mjs [DIR]
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2] ?? join(import.meta.dirname ?? '.', 'results', 'profile');
  const script = join(dir, 'petstore.js');
  const map = existsSync(`${script}.map`) ? new SourceMap(JSON.parse(readFileSync(`${script}.map`, 'utf8'))) : undefined;
  const bundleUrl = pathToFileURL(script).href;
  const countsFile = join(dir, 'requests.json');
  const counts = existsSync(countsFile) ? JSON.parse(readFileSync(countsFile, 'utf8')) : {};
  const out = [];
  for (const scenario of ['list', 'get', 'create']) {
    const results = new Map();
    const runs = new Map();
    for (const name of ['petstore', 'petstore+all', 'shared', 'ceiling']) {
      // One profile per run: SCENARIO-NAME.cpuprofile, or SCENARIO-NAME-runN.cpuprofile with PROFILE_RUNS.
      for (const tag of ['', ...Array.from({ length: 20 }, (_, i) => `-run${i + 1}`)]) {
        const file = join(dir, `${scenario}-${name}${tag}.cpuprofile`);
        if (!existsSync(file)) continue;
        const profile = JSON.parse(readFileSync(file, 'utf8'));
        // The requests each profile covers, as profile.mjs recorded them.
        const requests = counts[`${scenario}-${name}${tag}`] ?? 1;
        // (The bundle as the profile names it: it may have been moved here since.)
        const url = profile.nodes.find((n) => n.callFrame.url.endsWith('/petstore.js'))?.callFrame.url ?? bundleUrl;
        const run = { times: phaseTimes(profile, map, url), requests };
        if (!runs.has(name)) runs.set(name, []);
        runs.get(name).push(run);
        results.set(name, run);
      }
    }
    if ([...runs.values()].some((r) => r.length > 1)) out.push(phaseSummary(scenario, runs), '');
    else if (results.size > 0) out.push(phaseTable(scenario, results), '');
  }
  process.stdout.write(`${out.join('\n')}\n`);
}
