// Lints GET /v1/openapi.json of the built bundle with the linters users run on it, as they
// run them (their command-line tools, their stock rulesets):
//   - Spectral (@stoplight/spectral-cli), ruleset `spectral:oas`;
//   - Redocly (@redocly/cli), ruleset `recommended`.
// Every finding fails, errors and warnings alike, except the few in ACCEPTED below, each with
// its reason; an accepted finding that no longer occurs fails too, so the list stays true.
// Usage: npm run build (at the root), then here: npm ci && node lint-openapi.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBundle } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Findings that are right about the document and stay: [tool, rule, JSON pointer, reason]. */
const ACCEPTED = [
  ['spectral', 'operation-success-response', '#/paths/~1store~1orders/get/responses',
    'GET /store/orders answers 501 by contract (its shape is not published); a 2xx would be a lie'],
  ['spectral', 'operation-success-response', '#/paths/~1store~1orders/head/responses', 'the HEAD twin of the same'],
  ['redocly', 'operation-2xx-response', '#/paths/~1store~1orders/get/responses', 'the same 501, in Redocly'],
  ['redocly', 'operation-2xx-response', '#/paths/~1store~1orders/head/responses', 'the same 501, in Redocly'],
  ['redocly', 'no-server-example.com', '#/servers/1/url', "the demo config's environments are example.com placeholders"],
  ['redocly', 'no-server-example.com', '#/servers/2/url', 'the same, staging'],
];

/** JSON pointer (RFC 6901) of a path given as segments. */
function pointer(segments) {
  return `#/${segments.map((s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

function run(args) {
  const res = spawnSync(process.execPath, args, { cwd: here, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (res.error) throw res.error;
  return res;
}

/** Spectral's findings as { tool, rule, where, line, severity, message }. */
function spectral(file, rulesetFile) {
  const res = run(['node_modules/@stoplight/spectral-cli/dist/index.js', 'lint', '--ruleset', rulesetFile, '--format', 'json', '--quiet', '--fail-severity', 'error', file]);
  if (res.stdout.trim() === '') throw new Error(`spectral printed nothing (exit ${res.status}):\n${res.stderr}`);
  const severities = ['error', 'warning', 'info', 'hint'];
  return JSON.parse(res.stdout).map((r) => ({
    tool: 'spectral', rule: r.code, where: pointer(r.path), line: r.range.start.line + 1, severity: severities[r.severity], message: r.message,
  }));
}

/** Redocly's findings, the same shape. */
function redocly(file) {
  const res = run(['node_modules/@redocly/cli/bin/cli.js', 'lint', '--extends', 'recommended', '--format', 'json', file]);
  const start = res.stdout.indexOf('{');
  if (start === -1) throw new Error(`redocly printed no JSON (exit ${res.status}):\n${res.stdout}${res.stderr}`);
  return JSON.parse(res.stdout.slice(start)).problems.map((p) => ({
    tool: 'redocly', rule: p.ruleId, where: p.location?.[0]?.pointer ?? '', line: p.location?.[0]?.start?.line, severity: p.severity, message: p.message,
  }));
}

const server = await startBundle();
const dir = mkdtempSync(join(tmpdir(), 'petstore-lint-'));
let failed = false;
try {
  const res = await fetch(`${server.url}/openapi.json`);
  const text = await res.text();
  const file = join(dir, 'openapi.json');
  writeFileSync(file, text);
  const rulesetFile = join(dir, '.spectral.yaml');
  writeFileSync(rulesetFile, 'extends: ["spectral:oas"]\n');
  console.log(`fetched ${server.url}/openapi.json: ${text.split('\n').length} lines`);

  const findings = [...spectral(file, rulesetFile), ...redocly(file)];
  const accepted = new Set();
  for (const f of findings) {
    const reason = ACCEPTED.find(([tool, rule, where]) => tool === f.tool && rule === f.rule && where === f.where);
    if (reason) accepted.add(reason);
    else failed = true;
    console.log(`${reason ? 'accepted' : 'FAIL    '} ${f.tool} ${f.severity} ${f.rule} at line ${f.line} ${f.where}: ${f.message}${reason ? ` (${reason[3]})` : ''}`);
  }
  for (const entry of ACCEPTED) {
    if (accepted.has(entry)) continue;
    failed = true;
    console.log(`FAIL     accepted finding no longer reported, remove it from ACCEPTED: ${entry.slice(0, 3).join(' ')}`);
  }
  for (const tool of ['spectral', 'redocly']) {
    const mine = findings.filter((f) => f.tool === tool);
    console.log(`${tool}: ${mine.length} findings, ${mine.filter((f) => !ACCEPTED.some(([t, r, w]) => t === f.tool && r === f.rule && w === f.where)).length} not accepted`);
  }
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : err);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
