// The primary of --workers N (node:cluster): it serves no requests. It forks the workers (the
// first alone, so that a --seed is added once and a --port 0 is learned), prints the one
// ready line once all listen, restarts a worker that dies (with a backoff, logged), relays
// the workers' questions to each other (metrics, faults: protocol.ts), forwards SIGHUP
// as a reload to every worker (a starting one too, which applies it before it serves), and on SIGTERM or SIGINT stops them all gracefully: exit 0
// when every one stopped cleanly.
import cluster, { type Worker } from 'node:cluster';
import { batchingSink, jsonLogger, reporter, safeStdoutBytes, wholeLines } from '../core/index.js';
import type { ClusterOptions, CommandLine } from './contract.js';
import { ASK_TIMEOUT_MS, MAX_ASK_TIMEOUT_MS, isWorkerMessage, type PrimaryMessage, type WorkerMessage } from './protocol.js';
import { GENERATION_ENV, PORT_ENV, SEED_ENV, SLOT_ENV, WORKER_ENV } from './worker.js';

/** A worker that lived this long before dying is restarted after the shortest delay again. */
const HEALTHY_AFTER_MS = 10_000;
const FIRST_RESTART_MS = 100;
const MAX_RESTART_MS = 30_000;
/** Past the workers' own bounded stop (10 s grace, then the store and limits closed). */
const STOP_TIMEOUT_MS = 30_000;

interface Slot {
  /** 1..N: the worker's number in logs, kept across restarts. */
  readonly n: number;
  worker: Worker | undefined;
  ready: boolean;
  startedAt: number;
  /** Deaths in a row, each within HEALTHY_AFTER_MS of its start: the backoff's exponent. */
  quickDeaths: number;
  restart: NodeJS.Timeout | undefined;
  /** Called once with true (ready) or false (exited first) while someone waits for the start. */
  onStart: ((ok: boolean) => void) | undefined;
}

interface PendingAsk {
  readonly waiting: Set<number>;
  readonly payloads: unknown[];
  readonly timer: NodeJS.Timeout;
  /** Called once with the answers that came (all, or those in time) and how many did not. */
  readonly done: (payloads: unknown[], missing: number) => void;
}

/** The last gather of one `what` (a scrape): shared by every worker's gather for its window. */
interface Gathered {
  at: number;
  payloads: unknown[] | undefined;
  /** Workers' gathers waiting on the one under way: [worker, their id]. */
  waiters: Array<[Worker, number]> | undefined;
}

/**
 * Count faults whose claims the primary remembers, of those still catching and of those used
 * up, each (the least recently claimed go first).
 */
const MAX_CLAIM_NAMES = 1_000;

/** Sends, ignoring a channel that closed meanwhile (the exit handler deals with the worker). */
function deliver(worker: Worker | undefined, message: PrimaryMessage): void {
  if (worker === undefined || !worker.isConnected()) return;
  worker.send(message, () => undefined);
}

export function runPrimary(argv: readonly string[], resolved: ClusterOptions, cli: CommandLine): Promise<number> {
  const { io, onSignals, settleThenExit } = cli;
  const out = batchingSink(wholeLines(safeStdoutBytes()));
  const logger = jsonLogger(resolved.logLevel, out.sink);
  const report = reporter(logger, io, 'petstore: ');
  const slots: Slot[] = Array.from({ length: resolved.workers }, (_, i) => ({
    n: i + 1, worker: undefined, ready: false, startedAt: 0, quickDeaths: 0, restart: undefined, onStart: undefined,
  }));
  const bySlot = new Map<number, Slot>(); // cluster worker id -> slot
  const asks = new Map<number, PendingAsk>();
  const gathered = new Map<string, Gathered>();
  /** Claims granted so far by name (count faults as armed; see claim below), while fewer than their count. */
  const claims = new Map<string, number>();
  /** The names whose count was all granted (claims still on their way are refused). */
  const spent = new Set<string>();
  let nextAsk = 1;
  let phase: 'starting' | 'serving' | 'stopping' = 'starting';
  let listenPort = resolved.port;
  let learnedPort: number | undefined;
  /** The first worker's URL: every worker listens on its port. */
  let serviceUrl: string | undefined;
  let stopCode = 0;
  /** SIGHUPs so far: each worker says up to which one its config is (see 'ready'). */
  let generation = 0;
  let done: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => { done = resolve; });
  let stopTimer: NodeJS.Timeout | undefined;

  cluster.setupPrimary({ args: [...argv] });

  const fork = (slot: Slot, seed: boolean): void => {
    slot.restart = undefined;
    // With --port 0 the primary holds one handle per listen key: while a worker lives, the
    // others join its port by asking for 0 again; once none lives, the port learned is asked for.
    if (learnedPort !== undefined && slots.every((s) => s.worker === undefined)) listenPort = learnedPort;
    const worker = cluster.fork({
      [WORKER_ENV]: '1', [SLOT_ENV]: String(slot.n), [SEED_ENV]: seed ? '1' : '0', [PORT_ENV]: String(listenPort), [GENERATION_ENV]: String(generation),
    });
    worker.on('error', () => undefined); // a send to a dying worker: its exit is handled below
    slot.worker = worker;
    slot.ready = false;
    slot.startedAt = Date.now();
    bySlot.set(worker.id, slot);
  };

  const waitStart = (slot: Slot): Promise<boolean> => new Promise((resolve) => { slot.onStart = resolve; });

  const onMessage = (worker: Worker, m: unknown): void => {
    if (!isWorkerMessage(m)) return;
    const slot = bySlot.get(worker.id);
    if (slot === undefined) return;
    handle(worker, slot, m);
  };

  const handle = (worker: Worker, slot: Slot, m: WorkerMessage): void => {
    if (m.petstore === 'ready') {
      slot.ready = true;
      // A SIGHUP this worker cannot have seen (sent before it could hear): once more.
      if (m.generation < generation) deliver(worker, { petstore: 'reload', generation });
      const port = Number(new URL(m.url).port);
      serviceUrl ??= m.url;
      if (learnedPort === undefined) learnedPort = port;
      else if (port !== learnedPort) logger.log('error', 'a worker listens on another port than the service', { worker: slot.n, port, servicePort: learnedPort });
      if (slot.onStart !== undefined) {
        const started = slot.onStart;
        slot.onStart = undefined;
        started(true);
      } else {
        deliver(worker, { petstore: 'release' });
        logger.log('info', 'worker restarted', { worker: slot.n, workerPid: worker.process.pid });
      }
      if (phase === 'stopping') deliver(worker, { petstore: 'stop' });
    } else if (m.petstore === 'ask') {
      const targets = slots.flatMap((s) => (s.ready && s.worker !== undefined && s.worker !== worker && s.worker.isConnected() ? [s.worker] : []));
      const ms = typeof m.timeoutMs === 'number' && m.timeoutMs > 0 ? Math.min(m.timeoutMs, MAX_ASK_TIMEOUT_MS) : ASK_TIMEOUT_MS;
      askWorkers(targets, m.what, m.payload, (payloads, missing) => deliver(worker, { petstore: 'answers', id: m.id, payloads, missing }), ms);
    } else if (m.petstore === 'gather') {
      gather(worker, m.id, m.what, m.maxAgeMs);
    } else if (m.petstore === 'claim') {
      deliver(worker, { petstore: 'answers', id: m.id, payloads: [claim(m.name, m.max)] });
    } else if (m.petstore === 'answer') {
      const ask = asks.get(m.id);
      if (ask === undefined || !ask.waiting.delete(worker.id)) return;
      ask.payloads.push(m.payload);
      if (ask.waiting.size === 0) finishAsk(m.id);
    } else {
      for (const s of slots) if (s.ready && s.worker !== worker) deliver(s.worker, { petstore: 'told', what: m.what, payload: m.payload });
    }
  };

  /**
   * One unit of `name`, if fewer than `max` were granted: a count fault armed in every worker
   * catches exactly `count` requests however they spread over the workers, since each catch is
   * granted here, one message at a time. A name is a fault as armed (its operation and a
   * random arm id), so a fault set again starts from nothing. The names kept are bounded, the
   * used-up ones apart: a thousand faults armed and used up one after the other (a harness's
   * loop) must not push out one still armed, whose count would then begin again.
   */
  const claim = (name: string, max: number): boolean => {
    if (!(typeof name === 'string' && Number.isInteger(max)) || spent.has(name)) return false;
    const granted = claims.get(name) ?? 0;
    if (granted >= max) return false;
    claims.delete(name);
    if (granted + 1 < max) {
      claims.set(name, granted + 1);
      if (claims.size > MAX_CLAIM_NAMES) claims.delete(claims.keys().next().value as string);
    } else {
      spent.add(name);
      if (spent.size > MAX_CLAIM_NAMES) spent.delete(spent.values().next().value as string);
    }
    return true;
  };

  /** Asks `targets` what; done with their answers (none when there is nobody to ask). */
  const askWorkers = (targets: readonly Worker[], what: string, payload: unknown, done: PendingAsk['done'], timeoutMs = ASK_TIMEOUT_MS): void => {
    if (targets.length === 0) {
      done([], 0);
      return;
    }
    const id = nextAsk++;
    const timer = setTimeout(() => finishAsk(id), timeoutMs);
    asks.set(id, { waiting: new Set(targets.map((w) => w.id)), payloads: [], timer, done });
    for (const t of targets) deliver(t, { petstore: 'asked', id, what, payload });
  };

  const finishAsk = (id: number): void => {
    const ask = asks.get(id);
    if (ask === undefined) return;
    asks.delete(id);
    clearTimeout(ask.timer);
    ask.done(ask.payloads, ask.waiting.size);
  };

  /**
   * Every worker's answer (the asker's too: it may not count as ready yet), from the last
   * gather if it began within maxAgeMs, else from the one under way, else from a new one.
   */
  const gather = (from: Worker, id: number, what: string, maxAgeMs: number): void => {
    const last = gathered.get(what);
    const now = performance.now();
    if (last?.payloads !== undefined && now - last.at < maxAgeMs) {
      deliver(from, { petstore: 'answers', id, payloads: last.payloads });
      return;
    }
    if (last?.waiters !== undefined) {
      last.waiters.push([from, id]);
      return;
    }
    const entry: Gathered = { at: now, payloads: undefined, waiters: [[from, id]] };
    gathered.set(what, entry);
    const targets = slots.flatMap((s) => (s.worker !== undefined && s.worker.isConnected() && (s.ready || s.worker === from) ? [s.worker] : []));
    askWorkers(targets, what, undefined, (payloads) => {
      const waiters = entry.waiters ?? [];
      entry.waiters = undefined;
      entry.payloads = payloads;
      entry.at = now;
      for (const [w, wid] of waiters) deliver(w, { petstore: 'answers', id: wid, payloads });
    });
  };

  const onExit = (worker: Worker, code: number | null, signal: string | null): void => {
    const slot = bySlot.get(worker.id);
    if (slot === undefined) return;
    bySlot.delete(worker.id);
    slot.worker = undefined;
    slot.ready = false;
    for (const [id, ask] of asks) if (ask.waiting.delete(worker.id) && ask.waiting.size === 0) finishAsk(id);
    if (slot.onStart !== undefined) {
      const started = slot.onStart;
      slot.onStart = undefined;
      started(false);
      // The start itself failed: its own message is on stderr already.
      if (phase === 'starting') io.err(`petstore: worker ${slot.n} could not start (${code === null ? `signal ${signal}` : `exit code ${code}`}); stopping`);
    }
    if (phase === 'stopping') {
      if (code !== 0) stopCode = 1;
      if (slots.every((s) => s.worker === undefined)) done(stopCode);
      return;
    }
    if (phase === 'starting') return;
    const lived = Date.now() - slot.startedAt;
    slot.quickDeaths = lived < HEALTHY_AFTER_MS ? slot.quickDeaths + 1 : 0;
    const delay = Math.min(FIRST_RESTART_MS * 2 ** Math.max(0, slot.quickDeaths - 1), MAX_RESTART_MS);
    logger.log(code === 0 && signal === null ? 'warn' : 'error', 'worker exited; restarting it', {
      worker: slot.n, workerPid: worker.process.pid, code, signal, livedMs: lived, restartInMs: delay,
    });
    slot.restart = setTimeout(() => fork(slot, false), delay);
  };

  let stopAt = 0;
  const stop = (why: string): void => {
    if (phase === 'stopping') return;
    stopAt = performance.now();
    const wasStarting = phase === 'starting';
    phase = 'stopping';
    const running = slots.filter((s) => s.worker !== undefined).length;
    if (running > 0) report('info', `${why}, stopping ${running} workers (each finishes its in-flight requests)`, { workers: running });
    for (const s of slots) {
      if (s.restart !== undefined) clearTimeout(s.restart);
      s.restart = undefined;
      // A worker still starting is told once it is up (see 'ready').
      if (s.ready || !wasStarting) deliver(s.worker, { petstore: 'stop' });
    }
    if (slots.every((s) => s.worker === undefined)) {
      done(stopCode);
      return;
    }
    stopTimer = setTimeout(() => {
      for (const s of slots) {
        if (s.worker === undefined) continue;
        report('error', `worker ${s.n} did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`, { worker: s.n, workerPid: s.worker.process.pid });
        s.worker.process.kill('SIGKILL');
      }
    }, STOP_TIMEOUT_MS);
  };

  const reload = (): void => {
    if (typeof resolved.configSource !== 'string') {
      report('warn', 'SIGHUP ignored: running on the built-in config, there is no file to reload', { signal: 'SIGHUP' });
      return;
    }
    // Every worker, a starting one too: it applies the reload before it serves (worker.ts).
    generation++;
    for (const s of slots) deliver(s.worker, { petstore: 'reload', generation });
  };

  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  const offSignals = onSignals({ SIGTERM: () => stop('SIGTERM received'), SIGINT: () => stop('SIGINT received'), SIGHUP: reload });
  const cleanup = (): void => {
    if (stopTimer !== undefined) clearTimeout(stopTimer);
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
    offSignals();
    out.flush();
  };

  const start = async (): Promise<number> => {
    const [first, ...rest] = slots as [Slot, ...Slot[]];
    fork(first, true);
    let ok = await waitStart(first);
    if (ok && phase === 'starting') {
      for (const s of rest) fork(s, false);
      ok = (await Promise.all(rest.map(waitStart))).every(Boolean);
    }
    if (!ok || phase !== 'starting') {
      if (phase === 'starting') {
        stopCode = 1;
        stop('a worker could not start');
      }
      return finished;
    }
    phase = 'serving';
    io.err(cli.startLine());
    io.out(`petstore listening on ${serviceUrl as string}`);
    out.release();
    for (const s of slots) if (s.ready) deliver(s.worker, { petstore: 'release' });
    logger.log('info', 'workers started', { workers: slots.map((s) => ({ worker: s.n, workerPid: s.worker?.process.pid })) });
    return finished;
  };

  return start().then((code) => {
    cleanup();
    return settleThenExit(code, stopAt);
  });
}
