// Who holds a data file lock, and whether it is still held: the pure part of lock.ts.
//
// A lock is judged by its heartbeat (the holder refreshes the lock file's mtime), not by a
// pid: a pid means nothing in another pid namespace (every container's first process is
// pid 1) or after a reboot. The pid written in the lock is used only where it can be
// trusted, to see at once that a holder is gone: same boot, same pid namespace.
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** What a holder writes into its lock file (when the disk has room for it). */
export interface Holder {
  readonly pid: number;
  readonly host: string;
  /** /proc/sys/kernel/random/boot_id; '' where there is none. */
  readonly boot: string;
  /** The pid namespace, as /proc/self/ns/pid names it ("pid:[4026531836]"); '' where there is none. */
  readonly pidns: string;
  /** Random per lock holder: how a holder recognises its lock on a file system copied or repaired. */
  readonly token: string;
}

/** This process, as a holder (token left to the caller). */
export function thisProcess(): Omit<Holder, 'token'> {
  return { pid: process.pid, host: hostname(), boot: readOr('/proc/sys/kernel/random/boot_id'), pidns: linkOr('/proc/self/ns/pid') };
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return ''; // not Linux: the pid is never trusted, the heartbeat alone decides
  }
}

function linkOr(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

export function formatHolder(holder: Holder): string {
  return `${JSON.stringify(holder)}\n`;
}

/** The holder written in a lock file; undefined if it is empty (a full disk), torn or of an older format. */
export function parseHolder(text: string): Holder | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const { pid, host, boot, pidns, token } = doc as Record<string, unknown>;
  if (!Number.isSafeInteger(pid) || (pid as number) < 1) return undefined;
  if (typeof host !== 'string' || typeof boot !== 'string' || typeof pidns !== 'string' || typeof token !== 'string') return undefined;
  return { pid: pid as number, host, boot, pidns, token };
}

/** How a holder is named in messages. */
export function describeHolder(holder: Holder | undefined): string {
  if (holder === undefined) return 'another process';
  return holder.host === thisProcess().host ? `process ${holder.pid}` : `process ${holder.pid} on ${holder.host}`;
}

export type Verdict =
  /** Held by a live process: refuse now. */
  | { readonly kind: 'held' }
  /** Nobody holds it: take it over now. */
  | { readonly kind: 'free'; readonly reason: string }
  /** Refreshed recently by a holder we cannot check: watch whether the heartbeat goes on. */
  | { readonly kind: 'watch' };

export interface LockSighting {
  readonly holder: Holder | undefined;
  /** The lock file's mtime (the holder's last heartbeat). */
  readonly mtimeMs: number;
}

/**
 * Judges a lock found on the data file. Not refreshed for `staleMs` (by the wall clock, as
 * after a reboot or a crash long ago): free. Written by a process of this boot and this pid
 * namespace: its pid can be checked, so a dead holder frees it at once and a live one holds
 * it. Anything else (another namespace or machine, an empty or old-format lock, an mtime
 * in the future after a clock step): watch the heartbeat.
 */
export function judgeLock(
  seen: LockSighting,
  self: Omit<Holder, 'token'>,
  nowMs: number,
  staleMs: number,
  isAlive: (pid: number) => boolean,
): Verdict {
  const age = nowMs - seen.mtimeMs;
  if (age > staleMs) return { kind: 'free', reason: `not refreshed for ${Math.round(age)} ms` };
  const holder = seen.holder;
  if (holder === undefined || self.boot === '' || self.pidns === '') return { kind: 'watch' };
  if (holder.boot !== self.boot || holder.pidns !== self.pidns) return { kind: 'watch' };
  // Our own pid in this namespace and boot, in a lock this process does not hold (the caller
  // checked): left by an earlier namespace whose number has been reused. Its holder is gone.
  if (holder.pid === self.pid) return { kind: 'free', reason: `left by an earlier process ${holder.pid}` };
  if (!isAlive(holder.pid)) return { kind: 'free', reason: `process ${holder.pid} is gone` };
  return { kind: 'held' };
}
