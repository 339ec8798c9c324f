// The in-memory limiter's saved state (state.ts's file format): what the slots hold as of a
// time, and the slots rebuilt from it after a restart, the downtime credited on the wall clock.
import { DAY_MS, MINUTE_MS, checkLimits } from './buckets.js';
import { NONE, LINKS, L_NEXT, NUMBERS, N_AT, N_BANNED_UNTIL, N_DAY, N_MINUTE, N_PER_DAY, N_PER_MINUTE, N_STRIKES, refillSlot, type Slots } from './slots.js';
import { LIMITER_STATE_VERSION, type LimiterState, type LimiterStateEntry } from './state.js';

/**
 * Snapshot for persistence. Ids whose state equals a fresh id's (both buckets full, no
 * refusal, no ban) are left out: restoring them would change nothing.
 */
export function stateOf(s: Slots, mono: number, savedAt: number): LimiterState {
  const entries: LimiterStateEntry[] = [];
  const t = s.t;
  for (let slot = t.oldest; slot !== NONE; slot = t.link[slot * LINKS + L_NEXT] as number) {
    if (s.export !== undefined) s.beforeChange(slot);
    const num = t.num;
    const o = slot * NUMBERS;
    const perMinute = num[o + N_PER_MINUTE] as number;
    const perDay = num[o + N_PER_DAY] as number;
    refillSlot(num, o, { perMinute, perDay }, mono);
    const minute = num[o + N_MINUTE] as number;
    const day = num[o + N_DAY] as number;
    const strikes = num[o + N_STRIKES] as number;
    const bannedUntil = num[o + N_BANNED_UNTIL] as number;
    const banMs = bannedUntil > mono ? bannedUntil - mono : 0;
    const full = minute >= perMinute * MINUTE_MS && day >= perDay * DAY_MS;
    if (full && strikes === 0 && banMs === 0) continue;
    entries.push({
      id: t.ids[slot] as string,
      perMinute,
      perDay,
      minute: minute / MINUTE_MS,
      day: day / DAY_MS,
      strikes,
      banMs,
    });
  }
  return { version: LIMITER_STATE_VERSION, savedAt, entries };
}

/**
 * Replaces the current state by a snapshot. Monotonic time does not survive a restart, so
 * the downtime is measured on the wall clock, clamped at 0: a clock that went back refills
 * nothing (the conservative choice), and bans keep at least their saved remaining time.
 */
export function restoreSlots(s: Slots, state: LimiterState, wallNow: number, mono: number): void {
  if (state.version !== LIMITER_STATE_VERSION) {
    throw new Error(`unsupported limiter state version ${String(state.version)}`);
  }
  const downtime = wallNow > state.savedAt ? wallNow - state.savedAt : 0;
  // Validate everything before forgetting the current state: all or nothing.
  for (const e of state.entries) checkLimits(e);
  s.reset();
  const t = s.t;
  for (const e of state.entries) {
    const dup = t.index.get(e.id);
    if (dup !== undefined) s.remove(dup);
    const slot = s.insert(e.id, e, mono);
    const num = t.num;
    const o = slot * NUMBERS;
    num[o + N_MINUTE] = Math.max(0, e.minute) * MINUTE_MS;
    num[o + N_DAY] = Math.max(0, e.day) * DAY_MS;
    num[o + N_AT] = mono - downtime; // refillSlot() below credits the downtime at the saved rates
    refillSlot(num, o, e, mono);
    num[o + N_STRIKES] = Math.max(0, Math.floor(e.strikes));
    const banLeft = e.banMs - downtime;
    num[o + N_BANNED_UNTIL] = banLeft > 0 ? mono + banLeft : 0;
  }
}
