// The crash loop: rounds of concurrent creates and lists ended by SIGKILL at a random moment,
// and after every restart a full check of what the store holds.
import { Agent } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBundle, type Running } from '../support/bundle.js';
import { createPet, httpRequest, listAll, type PetRecord, type Rng } from '../support/wire.js';

export interface CrashLoopOptions {
  readonly rounds: number;
  readonly rng: Rng;
  /** Working directory; the data file is `pets.json` in it. */
  readonly dir: string;
  readonly config: string;
  /** A key whose limits the load cannot reach. */
  readonly key: string;
  readonly creators: number;
  readonly listers: number;
  /** The kill comes this many ms after the load starts, uniformly in [min, max]. */
  readonly killAfterMs: readonly [number, number];
  /** Every Nth round ends with SIGTERM instead of SIGKILL (round 0 always does), so the
   * limiter state file exists and is loaded by the next start. */
  readonly gracefulEvery: number;
  /**
   * Share of creates sent with an Idempotency-Key (default 0.5). A keyed create cut by the
   * kill is retried with the same key and payload after the restart, as a client with
   * backoff would, and must then be stored exactly once; a few answered ones are repeated
   * at once (an answer lost on the way) and must get the same 201.
   */
  readonly keyedShare?: number;
  readonly log?: (line: string) => void;
}

export interface CrashLoopStats {
  rounds: number;
  kills: number;
  attempted: number;
  acknowledged: number;
  /** Creates whose outcome we never learned (cut by the kill) that turned out durable. */
  unacknowledgedButKept: number;
  listsChecked: number;
  petsAtEnd: number;
  limiterStateLoads: number;
  /** Keyed creates cut by a kill and retried after the restart. */
  keyedRetried: number;
  /** Of those, the ones that had been made durable before the kill (the retry replayed them). */
  keyedReplayedAfterKill: number;
  /** Answered keyed creates repeated at once (their replay checked). */
  keyedRepeated: number;
}

type Sent = { readonly categoryId: number; readonly status: string | undefined };

class Violation extends Error {}

function fail(message: string): never {
  throw new Violation(message);
}

/** A random categoryId across the whole safe range, edges included. */
function randomCategory(rng: Rng): number {
  switch (rng.int(5)) {
    case 0: return Number.MAX_SAFE_INTEGER;
    case 1: return -Number.MAX_SAFE_INTEGER;
    case 2: return 0;
    case 3: return rng.int(1000);
    default: return Math.floor((rng.next() * 2 - 1) * Number.MAX_SAFE_INTEGER);
  }
}

const STATUSES = [undefined, 'available', 'pending', 'sold'] as const;

export async function runCrashLoop(opts: CrashLoopOptions): Promise<CrashLoopStats> {
  const { rng, key } = opts;
  const data = join(opts.dir, 'pets.json');
  const limitsFile = `${data}.limits.json`;
  const log = opts.log ?? (() => undefined);
  /** Every create ever sent, by its unique name. */
  const sent = new Map<string, Sent>();
  /** Acknowledged (201) pets: id -> name. */
  const acked = new Map<number, string>();
  /** Pets seen in a listing (visible means durable): id -> name. */
  const seen = new Map<number, string>();
  /** The highest id acknowledged or seen so far. */
  let maxId = 0;
  const remember = (map: Map<number, string>, id: number, name: string): void => {
    map.set(id, name);
    if (id > maxId) maxId = id;
  };
  const stats: CrashLoopStats = {
    rounds: 0, kills: 0, attempted: 0, acknowledged: 0, unacknowledgedButKept: 0, listsChecked: 0, petsAtEnd: 0, limiterStateLoads: 0,
    keyedRetried: 0, keyedReplayedAfterKill: 0, keyedRepeated: 0,
  };
  const keyedShare = opts.keyedShare ?? 0.5;
  /** Keyed creates whose answer the kill cut: retried after the restart. */
  let unanswered: Array<{ name: string; pet: Record<string, unknown>; key: string }> = [];
  const createKeyed = (srv: Running, pet: Record<string, unknown>, idem: string, agent?: Agent) => httpRequest(`${srv.url}/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem },
    body: JSON.stringify(pet),
    agent,
  });

  /**
   * After a restart, each keyed create the kill cut is sent again with its key: a 201 either
   * way, the pet stored before the kill when it was (listed at the restart), else a new one.
   * Exactly once: the next verify finds every name once.
   */
  const retryUnanswered = async (srv: Running, listed: ReadonlyMap<string, number>): Promise<void> => {
    for (const { name, pet, key: idem } of unanswered) {
      const res = await createKeyed(srv, pet, idem);
      if (res.status !== 201) fail(`retry of ${name} with its key: ${res.status} ${res.text}`);
      const got = JSON.parse(res.text) as PetRecord;
      checkPet(got, `retried 201 of ${name}`);
      if (got.name !== name) fail(`retry of ${name} answered ${res.text}`);
      const before = listed.get(name);
      if (before !== undefined) {
        if (got.id !== before) fail(`retry of ${name}: id ${got.id}, but it was stored before the kill as ${before} (stored twice)`);
        stats.keyedReplayedAfterKill++;
      }
      remember(acked, got.id, name);
      stats.keyedRetried++;
    }
    unanswered = [];
  };

  /** One pet as served: it was sent, with these fields, and its id never named another pet. */
  const checkPet = (p: PetRecord, where: string): void => {
    const s = sent.get(p.name);
    if (s === undefined) fail(`${where}: pet ${JSON.stringify(p)} was never sent`);
    if (p.categoryId !== s.categoryId || p.status !== s.status) {
      fail(`${where}: pet ${p.id} ${JSON.stringify(p)} does not match what was sent ${JSON.stringify(s)}`);
    }
    const keys = Object.keys(p).sort().join(',');
    if (keys !== (s.status === undefined ? 'categoryId,id,name' : 'categoryId,id,name,status')) fail(`${where}: pet ${p.id} has fields ${keys}`);
    const before = seen.get(p.id) ?? acked.get(p.id);
    if (before !== undefined && before !== p.name) fail(`${where}: id ${p.id} was ${before}, now ${p.name}`);
  };

  /** After a restart: everything acknowledged or once visible is there, and nothing else. */
  const verify = async (srv: Running, round: number): Promise<PetRecord[]> => {
    const where = `after restart ${round}`;
    const pets = await listAll(srv.url, key);
    const names = new Set<string>();
    let previous = 0;
    for (const p of pets) {
      if (!(p.id > previous)) fail(`${where}: ids not strictly ascending (${previous} then ${p.id})`);
      previous = p.id;
      checkPet(p, where);
      if (names.has(p.name)) fail(`${where}: ${p.name} stored twice`);
      names.add(p.name);
    }
    const byId = new Map(pets.map((p) => [p.id, p]));
    for (const [id, name] of acked) {
      if (byId.get(id)?.name !== name) fail(`${where}: acknowledged pet ${id} (${name}) lost; found ${JSON.stringify(byId.get(id))}`);
    }
    for (const [id, name] of seen) {
      if (byId.get(id)?.name !== name) fail(`${where}: pet ${id} (${name}) was listed before the kill and is gone`);
    }
    for (const p of pets) {
      if (!acked.has(p.id) && !seen.has(p.id)) stats.unacknowledgedButKept++;
      remember(seen, p.id, p.name);
    }
    return pets;
  };

  const checkLimiterState = (): void => {
    if (!existsSync(limitsFile)) return;
    let state: unknown;
    try {
      state = JSON.parse(readFileSync(limitsFile, 'utf8'));
    } catch (err) {
      fail(`limiter state ${limitsFile} is not valid JSON: ${(err as Error).message}`);
    }
    if ((state as { version?: unknown }).version !== 1) fail(`limiter state ${limitsFile} has no version 1`);
    stats.limiterStateLoads++;
  };

  for (let round = 0; round <= opts.rounds; round++) {
    checkLimiterState();
    const srv = await startBundle(['--config', opts.config, '--data', data], { cwd: opts.dir });
    try {
      const pets = await verify(srv, round);
      await retryUnanswered(srv, new Map(pets.map((p) => [p.name, p.id])));
      if (round === opts.rounds) {
        // The retries of the last round are checked here, as a restart checks the others.
        await verify(srv, round);
        // The last start only checks, then shows that ids go on above every one ever seen.
        const maxSeen = maxId;
        const name = `final-${rng.int(1e9)}`;
        sent.set(name, { categoryId: 1, status: undefined });
        const res = await createPet(srv.url, key, { name, categoryId: 1 });
        if (res.status !== 201) fail(`create after the last restart: ${res.status} ${res.text}`);
        const id = (JSON.parse(res.text) as PetRecord).id;
        if (!(id > maxSeen)) fail(`id ${id} reused (ids up to ${maxSeen} were seen)`);
        stats.petsAtEnd = (await listAll(srv.url, key)).length;
        const code = await srv.stop('SIGTERM');
        if (code !== 0) fail(`SIGTERM exit code ${code}; stderr: ${srv.stderr()}`);
        break;
      }
      await loadAndKill(srv, round);
    } catch (err) {
      srv.proc.kill('SIGKILL');
      await srv.exited;
      throw err;
    }
    stats.rounds++;
    log(`round ${round}: ${sent.size} sent, ${acked.size} acknowledged, ${seen.size} stored`);
  }
  stats.attempted = sent.size;
  stats.acknowledged = acked.size;
  return stats;

  async function loadAndKill(srv: Running, round: number): Promise<void> {
    const agent = new Agent({ keepAlive: true, maxSockets: opts.creators + opts.listers });
    let stopped = false;
    let workerFailure: Error | undefined;
    const creator = async (w: number): Promise<void> => {
      for (let i = 0; !stopped; i++) {
        const name = `r${round}-c${w}-${i}`;
        const pet = { name, categoryId: randomCategory(rng), status: rng.pick(STATUSES) };
        sent.set(name, { categoryId: pet.categoryId, status: pet.status });
        const idem = rng.chance(keyedShare) ? `key-${name}` : undefined;
        let res;
        try {
          res = idem === undefined ? await createPet(srv.url, key, pet, agent) : await createKeyed(srv, pet, idem, agent);
        } catch {
          // The kill cut the connection: this create was never acknowledged. A client with a
          // key retries it after the restart; without one it cannot know whether to.
          if (idem !== undefined) unanswered.push({ name, pet, key: idem });
          return;
        }
        if (res.status !== 201) fail(`create ${name}: ${res.status} ${res.text}`);
        const got = JSON.parse(res.text) as PetRecord;
        if (got.name !== name) fail(`create ${name} answered ${res.text}`);
        checkPet(got, `201 of ${name}`);
        remember(acked, got.id, name);
        if (idem !== undefined && rng.chance(0.2)) {
          // The answer "lost on the way": the same request again gets the same 201.
          let again;
          try {
            again = await createKeyed(srv, pet, idem, agent);
          } catch {
            return; // cut by the kill: the pet is acknowledged already
          }
          if (again.status !== 201 || again.text !== res.text) fail(`repeat of ${name}: ${again.status} ${again.text}, first ${res.text}`);
          stats.keyedRepeated++;
        }
      }
    };
    const lister = async (): Promise<void> => {
      while (!stopped) {
        const limit = rng.range(1, 100);
        const status = rng.chance(0.3) ? rng.pick(['available', 'pending', 'sold']) : undefined;
        const cursor = rng.chance(0.5) && maxId > 0 ? rng.int(maxId) : undefined;
        const url = `${srv.url}/pets?limit=${limit}${status ? `&status=${status}` : ''}${cursor !== undefined ? `&cursor=${cursor}` : ''}`;
        let res;
        try {
          res = await httpRequest(url, { headers: { authorization: `Bearer ${key}` }, agent });
        } catch {
          return;
        }
        if (res.status !== 200) fail(`GET ${url}: ${res.status} ${res.text}`);
        const page = JSON.parse(res.text) as PetRecord[];
        if (page.length > limit) fail(`GET ${url}: ${page.length} pets`);
        let previous = cursor ?? 0;
        for (const p of page) {
          if (!(p.id > previous)) fail(`GET ${url}: ids not ascending after ${previous}: ${p.id}`);
          previous = p.id;
          if (status !== undefined && p.status !== status) fail(`GET ${url}: pet ${p.id} has status ${String(p.status)}`);
          checkPet(p, `GET ${url}`);
          remember(seen, p.id, p.name);
        }
        stats.listsChecked++;
      }
    };
    const guard = (p: Promise<void>): Promise<void> => p.catch((err: unknown) => {
      workerFailure ??= err as Error;
      stopped = true;
    });
    const workers = [
      ...Array.from({ length: opts.creators }, (_, w) => guard(creator(w))),
      ...Array.from({ length: opts.listers }, () => guard(lister())),
    ];
    const [lo, hi] = opts.killAfterMs;
    await new Promise((r) => setTimeout(r, rng.range(lo, hi)));
    const graceful = round === 0 || (opts.gracefulEvery > 0 && round % opts.gracefulEvery === 0);
    if (graceful) {
      // The SIGTERM meets the load: requests in flight must finish (and be durable), busy
      // keep-alive connections are closed after their answer, new connections are refused.
      const code = await srv.stop('SIGTERM');
      stopped = true;
      if (code !== 0) fail(`round ${round}: SIGTERM exit code ${code}; stderr: ${srv.stderr()}`);
    } else {
      srv.proc.kill('SIGKILL');
      stopped = true;
      stats.kills++;
      await srv.exited;
    }
    await Promise.all(workers);
    agent.destroy();
    if (workerFailure) throw workerFailure;
  }
}
