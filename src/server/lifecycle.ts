// The node:http server's lifecycle around the app: listen, reload what a reload can apply,
// shut down within a grace period, release every resource.
import type { Server } from 'node:http';
import type { Config } from '../config/index.js';
import { StartError } from './contract.js';

/**
 * Fields a reload does not apply: where the service listens and writes, and what the
 * logger was built with. Everything else is read per request or re-applied by reload().
 */
export function restartOnlyChanges(old: Config, next: Config): string[] {
  const fields: string[] = [];
  if (old.host !== next.host) fields.push('host');
  if (old.port !== next.port) fields.push('port');
  if (old.dataFile !== next.dataFile) fields.push('dataFile');
  if (old.store !== next.store) fields.push('store');
  if (old.maxQueuedWrites !== next.maxQueuedWrites) fields.push('maxQueuedWrites');
  if (old.logLevel !== next.logLevel) fields.push('logLevel');
  if (old.idempotencyRetentionHours !== next.idempotencyRetentionHours) fields.push('idempotencyRetentionHours');
  if (old.metrics !== next.metrics) fields.push('metrics');
  if (old.limits !== next.limits) fields.push('limits');
  if (old.limitsOutage !== next.limitsOutage) fields.push('limitsOutage');
  // The journal's ring is sized at start (with no admin then, at the default 1,000).
  if (next.admin !== undefined && next.admin.journal !== (old.admin?.journal ?? 1000)) fields.push('admin.journal');
  // So are the namespaces' bound, and whether there are any.
  if (next.admin !== undefined && next.admin.namespaces !== (old.admin?.namespaces ?? 0)) fields.push('admin.namespaces');
  if (old.limitsFile !== next.limitsFile) fields.push('limitsFile');
  if (old.workers !== next.workers) fields.push('workers');
  return fields;
}

/**
 * Releases each resource whatever the others did: a store that fails to close must not keep
 * the limiter state from being saved. Rejects with the first failure, once all have run.
 */
export async function releaseAll(steps: ReadonlyArray<() => Promise<void>>): Promise<void> {
  const results = await Promise.allSettled(steps.map(async (step) => step()));
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}

export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const where = `${host}:${port}`;
      if (err.code === 'EADDRINUSE') reject(new StartError('listen', `port ${port} on ${host} is already in use`));
      else if (err.code === 'EACCES') reject(new StartError('listen', `no permission to listen on ${where}`));
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') reject(new StartError('listen', `cannot listen on ${where}: no such local address`));
      else reject(new StartError('listen', `cannot listen on ${where}: ${err.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Stop accepting; let in-flight requests finish for up to graceMs, then cut what remains. */
export function shutdown(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
