// Shared by the tool scripts: start the built bundle as a user would (--memory, --port 0,
// a throwaway config with one key per plan and both environments), read the ready line.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BUNDLE = join(ROOT, 'dist', 'petstore.js');
export const DEMO_KEY = 'tools-demo-key';

export const CONFIG = {
  environments: { production: 'https://api.example.com/v1', staging: 'https://staging-api.example.com/v1' },
  keys: [{ key: DEMO_KEY, plan: 'pro', name: 'tools-demo' }],
};

/** Spawn `node dist/petstore.js --memory --port 0`; resolves with { url, doc(), stop() }. */
export function startBundle() {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tools-'));
  const configFile = join(dir, 'petstore.config.json');
  writeFileSync(configFile, JSON.stringify(CONFIG));
  const proc = spawn(process.execPath, [BUNDLE, '--memory', '--port', '0', '--config', configFile, '--log-level', 'warn'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill(); reject(new Error('no ready line within 10 s')); }, 10_000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`the bundle exited with ${code} before it was ready (run npm run build at the root first)\n${err}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /^petstore listening on (http:\/\/\S+\/v1)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      const url = m[1];
      resolve({
        url,
        async doc() {
          const res = await fetch(`${url}/openapi.json`);
          if (res.status !== 200) throw new Error(`GET /v1/openapi.json answered ${res.status}`);
          return res.json();
        },
        stop() {
          proc.removeAllListeners('exit');
          const exited = new Promise((done) => proc.on('exit', done));
          proc.kill('SIGTERM');
          return exited.then(() => rmSync(dir, { recursive: true, force: true }));
        },
      });
    });
  });
}
