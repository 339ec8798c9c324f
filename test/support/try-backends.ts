// `npm run backends`: a throwaway PostgreSQL and Redis on this machine, to try petstore with more
// than one process without sudo or system services. Both run from Debian's binaries in temp
// folders on free loopback ports (the same code the tests use: ./postgres.ts, ./redis.ts); the
// line to run petstore against them is printed; Ctrl-C (SIGINT), SIGTERM or SIGHUP stops both
// and removes their folders. Nothing is kept: the next run starts empty.
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { skipReason } from './engines.js';
import { startPostgres, type PostgresServer } from './postgres.js';
import { startRedis, type RedisServer } from './redis.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

async function main(): Promise<number> {
  const missing = skipReason('npm run backends', ['postgres', 'redis']);
  if (missing !== undefined) {
    process.stderr.write(`${missing.replace(/^skipped: /, 'cannot start: ')}\n`);
    return 1;
  }
  process.stdout.write('starting PostgreSQL and Redis in temp folders...\n');
  const started = await Promise.allSettled([startPostgres(), startRedis()]);
  const [pgResult, redisResult] = started;
  if (pgResult.status === 'rejected' || redisResult.status === 'rejected') {
    for (const r of started) if (r.status === 'fulfilled') await r.value.close();
    const why = started.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
    process.stderr.write(`cannot start: ${why.join('\n')}\n`);
    return 1;
  }
  const pg: PostgresServer = pgResult.value;
  const redis: RedisServer = redisResult.value;

  const bundle = join(ROOT, 'dist', 'petstore.js');
  const command = relative(process.cwd(), bundle) || bundle;
  process.stdout.write([
    '',
    `PostgreSQL  ${pg.url}   (folder ${pg.dir})`,
    `Redis       ${redis.url}   (folder ${redis.dir})`,
    '',
    'Run petstore against them, in another terminal:',
    '',
    `  PETSTORE_STORE=${pg.url} PETSTORE_LIMITS=${redis.url} node ${command} --workers 2`,
    '',
    ...(existsSync(bundle) ? [] : ['(dist/petstore.js is not built yet: `npm run build` first)', '']),
    'Ctrl-C stops both servers and removes their folders.',
    '',
  ].join('\n'));

  let stopping = false;
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`\n${signal}: stopping PostgreSQL and Redis...\n`);
      void Promise.allSettled([pg.close(), redis.close()]).then(() => resolve());
    };
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
    // The servers' children are unref'd: this timer keeps the process waiting for a signal.
    setInterval(() => undefined, 1 << 30);
  });
  const left = [pg.dir, redis.dir].filter((d) => existsSync(d));
  if (left.length > 0) {
    process.stderr.write(`could not remove ${left.join(', ')}\n`);
    return 1;
  }
  process.stdout.write('stopped; folders removed\n');
  return 0;
}

process.exit(await main());
