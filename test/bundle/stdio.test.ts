// A closed stdout (a harness that reads the ready line and closes the pipe, a log collector
// that restarts) must not stop the service: log lines are dropped, requests still served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, call, startBundle, tempDir, writeConfig } from '../helpers.js';
import { isAlive, sleep } from '../reliability/lib.js';

test('stdout closed after the ready line: the service keeps serving, says so once on stderr, and stops cleanly', async () => {
  const dir = tempDir();
  // --log-level info: every request writes an access log line to the closed pipe.
  const srv = await startBundle(['--config', writeConfig(dir), '--memory', '--log-level', 'info'], { cwd: dir });
  try {
    srv.proc.stdout?.destroy();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await call(`${srv.url}/pets`, { key: KEYS.free })).status);
      await sleep(20);
    }
    assert.deepEqual(statuses, Array<number>(20).fill(200));
    await sleep(200);
    assert.ok(isAlive(srv.proc.pid ?? 0), `the process died; stderr: ${srv.stderr()}`);
    assert.equal(srv.stderr().match(/stdout failed \(EPIPE\)/g)?.length, 1, srv.stderr());
    assert.equal(await srv.stop(), 0, srv.stderr());
  } finally {
    srv.proc.kill('SIGKILL');
  }
});
