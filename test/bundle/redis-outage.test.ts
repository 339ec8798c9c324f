// A Redis outage plus a restart, from the outside: a bundle process started while Redis is
// stopped serves valid keys from full buckets by default ("limitsOutage": "open"), and refuses
// them with "strict"; once Redis is back, the shared limits decide again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startRedis } from '../support/redis.js';
import { until } from '../support/wait.js';

const skip = skipUnless('Redis outage black-box tests', ['redis']);
// 60 a minute and 60 a day: its day bucket refills one token per 24 minutes, so the counts
// below do not depend on how long the requests take.
const KEY = 'outage-key-0123';
const keys = [...(testConfig().keys as unknown[]), { key: KEY, plan: 'enterprise', name: 'outage', limits: { perMinute: 60, perDay: 60 } }];

describe('a process restarted during a Redis outage', { skip }, () => {
  for (const outage of [undefined, 'strict'] as const) {
    it(`limitsOutage ${outage ?? 'absent (open)'}: a valid key gets ${outage === 'strict' ? '429' : 'its full budget'}; Redis back: shared again`, async (t) => {
      const redis = await startRedis({ t });
      const dir = tempDir();
      writeConfig(dir, testConfig(outage === undefined ? { keys } : { keys, limitsOutage: outage }));
      const start = () => startBundle(['--config', join(dir, 'petstore.config.json'), '--memory', '--limits', redis.url, '--log-level', 'info'], { cwd: dir });
      let p = await start();
      t.after(() => p.stop());
      assert.equal((await call(`${p.url}/pets`, { key: KEY })).headers.get('x-ratelimit-remaining'), '59');
      await redis.stop();
      await p.stop();
      p = await start();
      const statuses: number[] = [];
      for (let i = 0; i < 70; i++) statuses.push((await call(`${p.url}/pets`, { key: KEY })).status);
      const ok = statuses.filter((s) => s === 200).length;
      assert.equal(ok, outage === 'strict' ? 0 : 60, statuses.join(' '));
      assert.equal(statuses.filter((s) => s === 429).length, 70 - ok);
      await redis.start();
      await until('Redis answers again', () => /answers again/.test(p.stdout()));
      const back = await call(`${p.url}/pets`, { key: KEY });
      assert.equal(back.status, 200, back.text);
      assert.equal(back.headers.get('x-ratelimit-remaining'), '59', 'Redis (back empty) decides');
    });
  }
});
