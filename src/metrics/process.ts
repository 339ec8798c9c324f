// The usual process figures, read at scrape time: resident memory, CPU, start time, open and
// maximum file descriptors (Linux /proc; left out where there is none), and event-loop delay.
import { readFileSync, readdirSync } from 'node:fs';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import type { Family } from './contract.js';

const NS = 1e9;
const RESOLUTION_MS = 10;

export class ProcessSampler {
  readonly #loop: IntervalHistogram;
  readonly #maxFds: number | undefined;

  constructor() {
    // A 10 ms timer samples how late the loop runs it; unref'd by node, it keeps nothing alive.
    this.#loop = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.#loop.enable();
    this.#maxFds = readMaxFds();
  }

  close(): void {
    this.#loop.disable();
  }

  families(): Family[] {
    const cpu = process.cpuUsage();
    const out: Family[] = [
      { name: 'process_cpu_seconds_total', help: 'User and system CPU time spent, in seconds.', type: 'counter', samples: [{ labels: {}, value: (cpu.user + cpu.system) / 1e6 }] },
      { name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.', type: 'gauge', merge: 'sum', samples: [{ labels: {}, value: process.memoryUsage.rss() }] },
      { name: 'process_start_time_seconds', help: 'Start time of the process since the Unix epoch, in seconds.', type: 'gauge', merge: 'min', samples: [{ labels: {}, value: Math.round(performance.timeOrigin) / 1000 }] },
    ];
    const open = openFds();
    if (open !== undefined) out.push({ name: 'process_open_fds', help: 'Open file descriptors.', type: 'gauge', merge: 'sum', samples: [{ labels: {}, value: open }] });
    if (this.#maxFds !== undefined) out.push({ name: 'process_max_fds', help: 'Maximum number of open file descriptors.', type: 'gauge', merge: 'min', samples: [{ labels: {}, value: this.#maxFds }] });
    const h = this.#loop;
    // Since the previous scrape: the monitor starts over after each one. It records each
    // interval between its timer's runs, the resolution included: the lag is what is beyond.
    const seen = h.count > 0;
    const lag = (v: number): number => (seen ? Math.max(0, v / NS - RESOLUTION_MS / 1000) : 0);
    out.push(
      { name: 'nodejs_eventloop_lag_p50_seconds', help: 'Median event-loop delay since the previous scrape, in seconds.', type: 'gauge', merge: 'max', samples: [{ labels: {}, value: lag(h.percentile(50)) }] },
      { name: 'nodejs_eventloop_lag_p99_seconds', help: '99th percentile of the event-loop delay since the previous scrape, in seconds.', type: 'gauge', merge: 'max', samples: [{ labels: {}, value: lag(h.percentile(99)) }] },
      { name: 'nodejs_eventloop_lag_max_seconds', help: 'Largest event-loop delay since the previous scrape, in seconds.', type: 'gauge', merge: 'max', samples: [{ labels: {}, value: lag(h.max) }] },
    );
    h.reset();
    return out;
  }
}

function openFds(): number | undefined {
  try {
    // The listing itself holds one descriptor on the directory while it is read.
    return readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined; // no /proc (not Linux): the figure is left out
  }
}

function readMaxFds(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}
