// The deployment runbook shows the proxy configs the rolling-restart test runs: each block that
// follows a `<!-- file: PATH -->` marker in docs/deployment.md is that file, byte for byte, so
// the page cannot drift from what is tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './tables.js';

test('docs/deployment.md holds docs/deployment/nginx.conf and haproxy.cfg as they are', () => {
  const page = readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8');
  const shown = [...page.matchAll(/<!-- file: (\S+) -->\n```[a-z]*\n([\s\S]*?)```\n/g)].map(([, path, body]) => [path as string, body as string] as const);
  assert.deepEqual(shown.map(([path]) => path), ['docs/deployment/nginx.conf', 'docs/deployment/haproxy.cfg']);
  for (const [path, body] of shown) assert.equal(body, readFileSync(join(ROOT, path), 'utf8'), `${path} as shown in docs/deployment.md`);
});
