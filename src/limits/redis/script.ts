// The one server-side step of the Redis limiter: both token buckets, the ban and the expiry of
// one id, atomically, in one round trip (EVALSHA). It is buckets.ts and MemoryLimiter.take()
// written in Lua, operation for operation, so that both limiters give the same answers (one
// table of cases runs on both: test/limits/limiter-cases.test.ts). The headers are built from
// its reply by the same limitResult() as the memory limiter's (headers.ts). One shortcut: a run
// of requests that are all admitted skips the per-request loop (the fast path, below), with the
// same subtractions, so the same doubles (test/limits/redis/script.test.ts compares the two).
//
// Time is the Redis server's (TIME), so processes whose clocks disagree charge the same
// buckets the same way. TIME is a wall clock, and the harness's offset added to it returns to 0
// at a reset: when the time steps back, an id's state stamped after the script's now is moved
// back with it, as if no time had passed since its last charge: nothing is refilled, and a
// running ban keeps what it had left then (its length at most), not the length of the step.
//
// State per id: a hash {m, d: tokens in token-ms of window (buckets.ts), at: ms of the last
// refill, k: strikes, b: ms at which the ban ends}. Numbers are written with %.17g, which
// round-trips a double exactly, so no precision is lost between requests.
//
// The hash expires (PEXPIRE) when both buckets would be full again and any ban is over.
// Nothing is lost by it: a full bucket admits the next request, which would reset the strikes
// anyway, so an expired id is exactly a fresh one. Redis memory stays bounded by the ids seen
// within a day.

/** Outcome codes of the reply, in the order of LimitOutcome. */
export const OUTCOMES = ['ok', 'rate_limited', 'temporarily_banned'] as const;

/** ARGV[1] of the start-up check: answers "ok" without touching any key. */
export const PROBE = 'probe';

/** Between the fields of the take script's reply (a store generation token holds none). */
export const REPLY_SEPARATOR = ' ';

/**
 * KEYS[1]: the id's hash. ARGV[1]: one string of numbers separated by spaces (one argument
 * for ioredis to encode and Redis to read, not six or seven): perMinute, perDay, ban.after (-1:
 * never), ban length in ms, n (how many requests of this id to charge, one after the other:
 * the requests of one id that arrived in the same turn of the event loop share one run), an
 * offset in ms added to the time (the harness's clock offset; 0 in service), and optionally a
 * seventh, the time in ms: FOR
 * TESTS ONLY (the shared table of cases drives both limiters with one manual clock). The
 * service never passes it: production always uses TIME.
 * Reply: one string, its fields separated by single spaces (REPLY_SEPARATOR; integers as
 * integers, the other numbers as %.17g, which the process reads back as the same doubles):
 * { now, strikes, ms of ban left, then runs of answers: how many requests in a row,
 * outcome code, minute tokens, day tokens, ms until admitted (Retry-After) of the run's first
 * request, and its step: 0 when every request of the run has the same answer, 1 when each
 * next one has one token less in each bucket (a flood of admitted requests: each takes
 * MINUTE_MS and DAY_MS token-ms, computed by the same subtraction in the process, so the
 * values are the same doubles) }. The first three describe the state after the last request:
 * the process keeps it, to limit from it should Redis stop answering.
 * KEYS[2], when given: the store generation's key (core/store-generation.ts); its token is the
 * reply's last element, read after this run's charges, so that a process caching the shared
 * store learns in this same round trip whether a reset has happened. A missing token (a Redis
 * restarted empty) is made anew from TIME, so it never equals one that processes may still hold.
 * (One string rather than an array: ioredis decodes each element of an array reply on its own,
 * a buffer, a string and several decoder steps each, which cost the process more per round trip
 * than the rest of a lone request's charge.)
 */
export const TAKE_SCRIPT = `
if ARGV[1] == '${PROBE}' then return 'ok' end
local MINUTE_MS, DAY_MS = 60000, 86400000
local a = {}
for x in string.gmatch(ARGV[1], '%S+') do a[#a + 1] = tonumber(x) end
local pm, pd = a[1], a[2]
local banAfter, banMs = a[3], a[4]
local n, offset = a[5], a[6]
local now
if a[7] then
  now = a[7]
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
now = now + offset

-- buckets.ts: slackMs, msUntilToken, msUntilFull
local function slack(w, cap)
  local tokenMs = w / cap
  if tokenMs < 1 then return tokenMs * 0.001 end
  return 0.001
end
local function untilToken(units, w, cap)
  local ms = (w - units) / cap - slack(w, cap)
  if ms > 0 then return ms end
  return 0
end
local function untilFull(units, w, cap)
  local ms = w - units / cap - slack(w, cap)
  if ms > 0 then return ms end
  return 0
end
local function num(x) return string.format('%.17g', x) end

local mcap, dcap = pm * MINUTE_MS, pd * DAY_MS
local minute, day, at, strikes, bannedUntil = mcap, dcap, now, 0, 0
local s = redis.call('HMGET', KEYS[1], 'm', 'd', 'at', 'k', 'b')
if s[1] then
  minute, day, at = tonumber(s[1]), tonumber(s[2]), tonumber(s[3])
  strikes, bannedUntil = tonumber(s[4]), tonumber(s[5])
end

-- The time stepped back (a reset of the harness's offset, TIME stepped on the Redis host):
-- the state is moved back with it, so a ban stamped on the later time keeps what it had left.
if at > now then
  bannedUntil = bannedUntil - (at - now)
  at = now
end

-- buckets.ts refill(): clamped even when no time passed (the limits may have shrunk)
local elapsed = 0
if now > at then elapsed = now - at end
minute = math.min(mcap, minute + elapsed * pm)
day = math.min(dcap, day + elapsed * pd)

-- The answers, run-length encoded: a flood of one id mostly repeats one answer (banned, or
-- refused with the same Retry-After) or takes one token after the other (admitted), and
-- formatting (and decoding) each would cost Redis and the process more than the rest. A run
-- is its first answer, how many, and its step (0: all equal; 1: each next one has exactly
-- MINUTE_MS and DAY_MS token-ms less, the process repeating the same subtraction).
local reply = { 0, 0, 0 }
local runO, runM, runD, runW, runN, runS = -1, 0, 0, 0, 0, 0
local lastM, lastD = 0, 0
local function closeRun()
  if runN > 0 then
    reply[#reply + 1] = runN
    reply[#reply + 1] = runO
    reply[#reply + 1] = num(runM)
    reply[#reply + 1] = num(runD)
    reply[#reply + 1] = num(runW)
    reply[#reply + 1] = runS
  end
end
-- The fast path: not banned, and every one of the n requests admitted, each taking exactly
-- MINUTE_MS and DAY_MS (no clamp at 0). That is a flood of one key within its plan, the
-- common case under load, and the general loop below costs about 1.5-2 us of Lua per request
-- (function calls, math.max, the run bookkeeping), Redis's whole CPU per request; this costs
-- two subtractions per request. It must leave exactly what the general loop would (the reply
-- and the stored doubles), because the process repeats the same subtractions (limiter.ts):
-- - Each bucket's final value is the same repeated x - MINUTE_MS (x - n * MINUTE_MS would
--   round differently), so it is the general loop's sequence of doubles, unclamped.
-- - Admission is untilToken's own expression, (w - units) / cap - slack(w, cap) > 0 refuses
--   (NaN admits, as there), and only the last request's units are checked: the units only go
--   down from one request to the next (x - MINUTE_MS rounds to at most x), and the expression
--   is non-increasing in units (a subtraction, a division by a positive cap and a subtraction
--   of a constant, each correctly rounded, so monotone), so if the last request is admitted
--   every earlier one is. The first is checked too, so that a refused flood declines at once.
--   (The check for a clamp below implies it as well: a last value >= 0 means every request
--   found MINUTE_MS and DAY_MS token-ms or more, where the expression is < 0.)
-- - No clamp: the final value >= 0 (false for NaN) implies every earlier one is, the
--   sequence going down.
-- - The run: the general loop makes one run {n, ok, the first answer's tokens, wait 0, step 1
--   (0 when n is 1)}: from the second request on, each answer is the last one less the same
--   subtraction, so it extends the run with step 1, unless the second one's subtraction left
--   both buckets unchanged, when it takes step 0 (tokens of 2^69 token-ms and more, far above
--   the largest plan's 6 * 10^16 and 8.64 * 10^19): the fast path declines then.
-- Otherwise (a ban, a refusal anywhere in the run, a clamp) it has changed nothing, and the
-- general loop answers from the same start state.
local fast = false
if bannedUntil <= now and n >= 1 then
  local sm, sd = slack(MINUTE_MS, pm), slack(DAY_MS, pd)
  if not ((MINUTE_MS - minute) / pm - sm > 0) and not ((DAY_MS - day) / pd - sd > 0) then
    -- m, d: the units before the last request, by the same subtractions as the loop's.
    local m, d = minute, day
    for i = 2, n do
      m = m - MINUTE_MS
      d = d - DAY_MS
    end
    local mn, dn = m - MINUTE_MS, d - DAY_MS
    local m1, d1 = minute - MINUTE_MS, day - DAY_MS
    if not ((MINUTE_MS - m) / pm - sm > 0) and not ((DAY_MS - d) / pd - sd > 0)
      and mn >= 0 and dn >= 0
      and (n == 1 or m1 - MINUTE_MS ~= m1 or d1 - DAY_MS ~= d1) then
      fast = true
      runO, runM, runD, runW, runN = 0, m1, d1, 0, n
      if n > 1 then runS = 1 end
      minute, day, strikes = mn, dn, 0
    end
  end
end
-- The general loop, request by request (none when the fast path answered).
local general = n
if fast then general = 0 end
for i = 1, general do
  local admitIn = math.max(untilToken(minute, MINUTE_MS, pm), untilToken(day, DAY_MS, pd))
  local outcome, wait
  if bannedUntil > now then
    -- A ban is not extended by requests made during it, and charges nothing.
    outcome = 2
    wait = math.max(bannedUntil - now, admitIn)
  elseif admitIn == 0 then
    -- Both buckets hold a token: take one from each (a refusal takes from neither).
    minute = math.max(0, minute - MINUTE_MS)
    day = math.max(0, day - DAY_MS)
    strikes = 0
    outcome = 0
    wait = 0
  else
    strikes = strikes + 1
    if banAfter >= 0 and strikes > banAfter + 1 and banMs > 0 then
      strikes = 0
      bannedUntil = now + banMs
      outcome = 2
      wait = math.max(bannedUntil - now, admitIn)
    else
      outcome = 1
      wait = admitIn
    end
  end
  if outcome == runO and wait == runW and (runN == 1 or runS == 0) and minute == lastM and day == lastD then
    runN, runS = runN + 1, 0
  elseif outcome == runO and wait == runW and (runN == 1 or runS == 1) and minute == lastM - MINUTE_MS and day == lastD - DAY_MS then
    runN, runS = runN + 1, 1
  else
    closeRun()
    runO, runM, runD, runW, runN, runS = outcome, minute, day, wait, 1, 0
  end
  lastM, lastD = minute, day
end
closeRun()

redis.call('HSET', KEYS[1], 'm', num(minute), 'd', num(day), 'at', num(now), 'k', strikes, 'b', num(bannedUntil))
local ttl = math.max(untilFull(minute, MINUTE_MS, pm), untilFull(day, DAY_MS, pd), bannedUntil - now)
-- A test's own time does not flow with Redis's: keep its keys a minute at least.
if a[7] then ttl = math.max(ttl, 60000) end
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(1, math.ceil(ttl))))
reply[1] = num(now)
reply[2] = strikes
reply[3] = num(math.max(0, bannedUntil - now))
if KEYS[2] then
  local gen = redis.call('GET', KEYS[2])
  if not gen then
    local t = redis.call('TIME')
    gen = t[1] .. string.format('%06d', tonumber(t[2])) .. ':0'
    redis.call('SET', KEYS[2], gen)
  end
  reply[#reply + 1] = gen
end
-- One string, the fields separated by spaces: the client decodes one bulk string instead of
-- an array of ten or more elements (each its own buffer, string and decoder steps).
return table.concat(reply, ' ')
`;

/**
 * Moves the store generation on (a reset, a seed): "<epoch>:<n>" becomes "<epoch>:<n + 1>"; a
 * missing one starts a new epoch from TIME. Returns the new token.
 */
export const ADVANCE_GENERATION_SCRIPT = `
local gen = redis.call('GET', KEYS[1])
local epoch, n
if gen then epoch, n = string.match(gen, '^(%d+):(%d+)$') end
if epoch then
  gen = epoch .. ':' .. string.format('%d', tonumber(n) + 1)
else
  local t = redis.call('TIME')
  gen = t[1] .. string.format('%06d', tonumber(t[2])) .. ':1'
end
redis.call('SET', KEYS[1], gen)
return gen
`;
