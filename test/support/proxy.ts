// Real, throwaway load balancers for tests: nginx and haproxy from Debian's packages, each in a
// temp folder on a free loopback port, with the site config a test gives (the runbook's own
// files, ports filled in) wrapped in the few global settings a throwaway instance needs (no
// daemon, pid and temp files in its folder, errors on stderr). Nothing left behind.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binaries, isRoot, removeDir, type AfterHook, type AvailabilityOptions } from './engines.js';
import { engineProcess, startTracked, type EngineProcess } from './engine-process.js';
import { accepts } from './free-port.js';

export interface ProxyOptions extends AvailabilityOptions {
  /** Registers `close()` with `t.after`. */
  readonly t?: AfterHook;
  /** The site config for a proxy listening on 127.0.0.1:`port`. */
  site(port: number): string;
}

export interface ProxyServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly running: boolean;
  /** Stops and removes the folder; safe to call twice. */
  close(): Promise<void>;
  /** What the proxy wrote so far (the tail): its error log. */
  log(): string;
}

function serve(proc: EngineProcess, dir: string, opts: ProxyOptions, release: () => void): ProxyServer {
  let closed = false;
  const server: ProxyServer = {
    get url() {
      return `http://127.0.0.1:${proc.port}`;
    },
    get port() {
      return proc.port;
    },
    dir,
    get running() {
      return proc.running;
    },
    async close() {
      if (closed) return;
      closed = true;
      await proc.stop(10_000);
      release();
      removeDir(dir);
    },
    log: () => proc.log(),
  };
  opts.t?.after(() => server.close());
  return server;
}

async function begin(proc: EngineProcess, dir: string, opts: ProxyOptions): Promise<ProxyServer> {
  const { release } = await startTracked(proc, dir);
  return serve(proc, dir, opts, release);
}

/**
 * nginx with `site` included in its `http {}` block, as Debian's nginx.conf includes
 * /etc/nginx/conf.d/*.conf. One worker process; no access log.
 */
export async function startNginx(opts: ProxyOptions): Promise<ProxyServer> {
  const found = binaries('nginx', opts);
  if (!found.available) throw new Error(`nginx is not available: ${found.missing.join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'petstore-nginx-'));
  const conf = join(dir, 'nginx.conf');
  const proc = engineProcess({
    name: 'nginx',
    file: found.bin.nginx as string,
    // -e: errors on stderr from the first moment (not Debian's /var/log/nginx/error.log).
    args: () => ['-p', dir, '-c', conf, '-e', 'stderr'],
    prepare(port) {
      writeFileSync(join(dir, 'site.conf'), opts.site(port));
      writeFileSync(conf, [
        'daemon off;',
        'worker_processes 1;',
        // As root, nginx's workers would run as nobody, who cannot enter this 0700 folder.
        ...(isRoot() ? ['user root;'] : []),
        `pid ${join(dir, 'nginx.pid')};`,
        'error_log stderr warn;',
        'events { worker_connections 1024; }',
        'http {',
        '    access_log off;',
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${join(dir, t)};`),
        `    include ${join(dir, 'site.conf')};`,
        '}',
        '',
      ].join('\n'));
    },
    readyProbe: (port) => accepts(port),
    portTaken: /Address already in use/,
    // SIGTERM: a fast stop (SIGQUIT would wait for idle keep-alive connections to close).
    stopSignal: 'SIGTERM',
  });
  return begin(proc, dir, opts);
}

/**
 * haproxy with `site` (its defaults, frontend and backend sections) after a global section,
 * as Debian's /etc/haproxy/haproxy.cfg starts with one. In the foreground (-db).
 */
export async function startHaproxy(opts: ProxyOptions): Promise<ProxyServer> {
  const found = binaries('haproxy', opts);
  if (!found.available) throw new Error(`haproxy is not available: ${found.missing.join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'petstore-haproxy-'));
  const global = join(dir, 'global.cfg');
  const site = join(dir, 'site.cfg');
  const proc = engineProcess({
    name: 'haproxy',
    file: found.bin.haproxy as string,
    args: () => ['-db', '-f', global, '-f', site],
    prepare(port) {
      writeFileSync(global, ['global', '    maxconn 2000', '    log stderr format raw local0 notice', ''].join('\n'));
      writeFileSync(site, opts.site(port));
    },
    readyProbe: (port) => accepts(port),
    portTaken: /Address already in use|cannot bind socket/,
    stopSignal: 'SIGTERM',
  });
  return begin(proc, dir, opts);
}
