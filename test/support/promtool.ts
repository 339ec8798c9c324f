// `promtool check metrics` (Debian's prometheus package), for the tests of GET /metrics.
import { spawnSync } from 'node:child_process';

const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();

/** The `skip` option of a test that needs promtool: false when it is installed. */
export const noPromtool: string | false = found === '' ? 'skipped: promtool not installed (apt-get install -y prometheus)' : false;

/** Runs `promtool check metrics` on a text: its exit code and everything it printed. */
export function checkWithPromtool(text: string): { status: number | null; output: string } {
  const r = spawnSync(found, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
