// `petstore keys add|list|revoke`: API keys in the config file, for operators. A new key is
// 32 random bytes (base64url), printed once on stdout; the file keeps only its SHA-256. Every
// change is made under the config's lock (config-lock.ts), checked as a start would check it,
// then written atomically (temp file, fsync, rename, directory fsync) with the rest of the
// file byte for byte; a refused change leaves the file untouched. The running service is
// never written to: it reads the file on SIGHUP.
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, MAX_CONFIG_BYTES, escapeKeyName, jsonSyntaxError, keyDigest, keyNameProblem, parseConfig, repeatedMembers, type Config } from '../config/index.js';
import { FileTooLargeError, NotRegularFileError, fsyncDir, readRegularFileSync, writeNewFileSynced } from '../core/index.js';
import type { DataLock } from '../store/index.js';
import { UsageError, type Io } from './args.js';
import { ConfigLockError, lockConfig } from './config-lock.js';
import { insertKey, removeKey } from './config-text.js';

export const KEYS_USAGE = `Usage: node dist/petstore.js keys COMMAND [--config FILE]

  keys add --plan PLAN --name NAME [--limits PER_MINUTE/PER_DAY]
                       make a key, print it once, add its SHA-256 to the config file
  keys list            names, plans and limits (never a key or a whole digest)
  keys revoke NAME     remove the key of that name

The config file is --config FILE, else PETSTORE_CONFIG, else ./petstore.config.json.
A running service applies a change on SIGHUP: systemctl reload petstore, or kill -HUP PID.`;

const NEXT_STEP = 'next: reload the running service to apply it: systemctl reload petstore (or kill -HUP <pid>)';

/** A change refused (exit 1): the file was left as it was. */
class Refused extends Error {}

export async function runKeys(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  try {
    return await keys(argv, env, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`petstore keys: ${err.message}\n${KEYS_USAGE}`);
      return 2;
    }
    if (err instanceof Refused || err instanceof ConfigError || err instanceof ConfigLockError) {
      io.err(`petstore keys: ${err.message}`);
      return 1;
    }
    io.err(`petstore keys: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

async function keys(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let parsed: ReturnType<typeof parseKeysArgs>;
  try {
    parsed = parseKeysArgs(argv);
  } catch (err) {
    throw err instanceof UsageError ? err : new UsageError((err as Error).message);
  }
  const { command, values, positionals } = parsed;
  if (values.help || command === undefined) {
    io.out(KEYS_USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  const file = configFile(values.config, env);
  if (command === 'list') {
    if (positionals.length > 0) throw new UsageError('keys list takes no arguments');
    // No lock: a change renames a whole new file into place, so a read sees one or the other.
    const original = readConfig(file);
    io.out(listing(checkCurrent(original, file), original.raw));
    io.err('next: keys add --plan PLAN --name NAME adds one; keys revoke NAME removes one');
    return 0;
  }
  const change = planChange(command, values, positionals);
  // Held from the read to the rename: a change made alongside waits, and none is lost.
  const lock = await lockConfig(file, (line) => io.err(line));
  try {
    const original = readConfig(file);
    checkCurrent(original, file);
    return change.kind === 'add' ? await add(change, file, original, lock, io) : await revoke(change.name, file, original, lock, io);
  } finally {
    lock.release();
  }
}

type Change =
  | { readonly kind: 'add'; readonly plan: string; readonly name: string; readonly limits: { perMinute: number; perDay: number } | undefined }
  | { readonly kind: 'revoke'; readonly name: string };

/** The change asked for, its arguments checked before the file is locked or read. */
function planChange(command: string, values: ReturnType<typeof parseKeysArgs>['values'], positionals: readonly string[]): Change {
  if (command === 'add') {
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    if (values.plan === undefined || values.name === undefined) throw new UsageError('keys add needs --plan PLAN and --name NAME');
    const nameProblem = keyNameProblem(values.name);
    if (nameProblem !== undefined) throw new Refused(`--name ${nameProblem}; the file is unchanged`);
    const limits = values.limits === undefined ? undefined : parseLimits(values.limits);
    return { kind: 'add', plan: values.plan, name: values.name, limits };
  }
  if (command === 'revoke') {
    const name = positionals[0];
    if (name === undefined || positionals.length > 1) throw new UsageError('keys revoke takes one NAME');
    return { kind: 'revoke', name };
  }
  throw new UsageError(`unknown keys command "${command}"`);
}

function checkCurrent(original: ConfigText, file: string): Config {
  return check(original.text, file, 'the config file is not valid as it is; fix it first');
}

async function add(change: Extract<Change, { kind: 'add' }>, file: string, original: ConfigText, lock: DataLock, io: Io): Promise<number> {
  const entry: Record<string, unknown> = { sha256: '', plan: change.plan, name: change.name };
  if (change.limits !== undefined) entry.limits = change.limits;
  const key = randomBytes(32).toString('base64url');
  entry.sha256 = keyDigest(key);
  const text = insertKey(original.text, entryText(entry));
  const next = check(text, file, 'key not added, the file is unchanged');
  await writeAtomically(file, original.bom + text, original.bytes, lock);
  const added = next.keys.get(entry.sha256 as string);
  io.out(key);
  io.err(`added key "${escapeKeyName(change.name)}" (plan ${escapeKeyName(change.plan)}, ${added?.limits.perMinute}/minute, ${added?.limits.perDay}/day) to ${file}; ` +
    'only its SHA-256 is kept: the key above is shown this once');
  io.err(NEXT_STEP);
  return 0;
}

async function revoke(name: string, file: string, original: ConfigText, lock: DataLock, io: Io): Promise<number> {
  const index = namesOf(original.raw).indexOf(name);
  if (index === -1) throw new Refused(`${file} has no key named "${escapeKeyName(name)}"; the file is unchanged (keys list shows the names)`);
  const text = removeKey(original.text, index);
  check(text, file, 'key not revoked, the file is unchanged');
  await writeAtomically(file, original.bom + text, original.bytes, lock);
  io.err(`revoked key "${escapeKeyName(name)}" in ${file}; the running service accepts it until it reloads`);
  io.err(NEXT_STEP);
  return 0;
}

function parseKeysArgs(argv: readonly string[]) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      plan: { type: 'string' },
      name: { type: 'string' },
      limits: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  return { command, values, positionals: rest };
}

function configFile(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const given = flag ?? (env.PETSTORE_CONFIG || undefined);
  const path = resolve(given ?? 'petstore.config.json');
  if (!existsSync(path)) {
    throw new Refused(given === undefined
      ? 'no ./petstore.config.json here: give the config file with --config FILE (the built-in demo config cannot be changed)'
      : `${path}: cannot read the config file: file not found`);
  }
  // Through a link, the file it points to is the one changed (the link stays a link).
  const real = realpathSync(path);
  // Refused before its lock is taken (no `<file>.lock` beside a device) and before a read
  // that would never end: a FIFO blocks, /dev/zero never stops giving bytes. The service
  // refuses such a file at start and on reload alike.
  const st = statSync(real);
  if (!st.isFile()) throw new Refused(`${real}: not usable as the config file: ${new NotRegularFileError(st).message}; nothing written`);
  return real;
}

/** What the file holds: its bytes, the byte order mark it starts with (or ''), the JSON text after it. */
interface ConfigText {
  readonly bytes: Buffer;
  readonly bom: string;
  readonly text: string;
  readonly raw: Record<string, unknown>;
}

const BOM = '\uFEFF';

function readConfig(file: string): ConfigText {
  let bytes: Buffer;
  try {
    // Checked again as it is opened: the path may have been swapped for a FIFO or a device.
    bytes = readRegularFileSync(file, MAX_CONFIG_BYTES);
  } catch (err) {
    if (err instanceof NotRegularFileError || err instanceof FileTooLargeError) throw new Refused(`${file}: not usable as the config file: ${err.message}; nothing written`);
    throw err;
  }
  const whole = bytes.toString('utf8');
  if (!Buffer.from(whole, 'utf8').equals(bytes)) throw new Refused(`${file}: not valid UTF-8; it cannot be changed without changing other bytes`);
  // As the service reads it (load.ts): a UTF-8 byte order mark is ignored, and written back.
  const bom = whole.startsWith(BOM) ? BOM : '';
  const text = whole.slice(bom.length);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Placed by line and column, never quoted: the text may hold a key in clear.
    const syntax = jsonSyntaxError(text);
    throw new ConfigError(file, [syntax === undefined
      ? `not valid JSON: ${(err as Error).message}`
      : `not valid JSON at line ${syntax.line}, column ${syntax.column}: ${syntax.reason}`]);
  }
  return { bytes, bom, text, raw: raw as Record<string, unknown> };
}

/** The checks of a start (load.ts): JSON, every member named once, then parseConfig. */
function check(text: string, file: string, outcome: string): Config {
  try {
    const raw: unknown = JSON.parse(text);
    const repeated = repeatedMembers(text);
    if (repeated.length > 0) throw new ConfigError(file, repeated.map((p) => `${p} is given more than once`));
    return parseConfig(raw, file, dirname(file));
  } catch (err) {
    if (err instanceof ConfigError) throw new Refused(`${outcome}:\n${err.message}`);
    throw new Refused(`${outcome}: ${(err as Error).message}`);
  }
}

function parseLimits(v: string): { perMinute: number; perDay: number } {
  const m = /^([0-9]{1,13})\/([0-9]{1,13})$/.exec(v);
  if (m === null) throw new UsageError(`--limits must be PER_MINUTE/PER_DAY, such as 600/100000, got "${v}"`);
  return { perMinute: Number(m[1]), perDay: Number(m[2]) };
}

/** One line, in the style of the demo config: { "sha256": "...", "plan": "...", "name": "..." }. */
function entryText(entry: Record<string, unknown>): string {
  const members = Object.entries(entry).map(([k, v]) => {
    const value = typeof v === 'object' && v !== null ? entryText(v as Record<string, unknown>) : JSON.stringify(v);
    return `${JSON.stringify(k)}: ${value}`;
  });
  return `{ ${members.join(', ')} }`;
}

/** Each key's name as the service knows it (an unnamed key is "key #N"), in file order. */
function namesOf(raw: Record<string, unknown>): string[] {
  const list = Array.isArray(raw.keys) ? (raw.keys as unknown[]) : [];
  return list.map((item, i) => {
    const name = (item as { name?: unknown } | null)?.name;
    return typeof name === 'string' ? name : `key #${i + 1}`;
  });
}

function listing(config: Config, raw: Record<string, unknown>): string {
  const list = Array.isArray(raw.keys) ? (raw.keys as Array<Record<string, unknown>>) : [];
  const rows = [['NAME', 'PLAN', 'PER_MINUTE', 'PER_DAY', 'GIVEN AS']];
  const names = namesOf(raw);
  // Config order; parseConfig kept the same order in its Map.
  [...config.keys.values()].forEach((k, i) => {
    const given = typeof list[i]?.key === 'string' ? 'key in clear' : 'sha256';
    // Escaped whatever the check let through: a name is printed, never obeyed by the terminal.
    rows.push([escapeKeyName(names[i] ?? k.name), escapeKeyName(k.plan), String(k.limits.perMinute), String(k.limits.perDay), `${given} (${k.digest.slice(0, 8)}...)`]);
  });
  const widths = (rows[0] as string[]).map((_, c) => Math.max(...rows.map((r) => (r[c] as string).length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c] as number))).join('  ')).join('\n');
}

/**
 * temp file beside it (same mode, same owner when we can), fsync, then a check that the lock
 * is still ours and nobody changed the file meanwhile, rename, directory fsync: the file is the old one or the new
 * one, whole, whatever happens.
 */
async function writeAtomically(file: string, text: string, expected: Buffer, lock: DataLock): Promise<void> {
  const dir = dirname(file);
  const tmp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const st = statSync(file);
  await writeNewFileSynced(tmp, text, st.mode & 0o777);
  try {
    chmodSync(tmp, st.mode & 0o7777); // the umask may have narrowed it
    if (process.getuid?.() === 0) chownSync(tmp, st.uid, st.gid);
    // Under the lock, only a hand edit (or a lock taken over from under us) changes the file.
    const lost = lock.problem();
    if (lost !== undefined) throw new Refused(`${file}: the lock was lost while the change was being made (${lost}); nothing written, try again`);
    if (!readFileSync(file).equals(expected)) throw new Refused(`${file} changed while the change was being made; nothing written, try again`);
    await rename(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed into place, or never made: nothing left behind either way
    }
    throw err;
  }
  await fsyncDir(dir);
}
