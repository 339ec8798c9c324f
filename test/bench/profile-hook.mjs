// Preloaded by profile.mjs (node --import): the server's CPU profile covers only the measured
// load, not its startup, the seeding or the warm-up. The first SIGUSR2 starts V8's sampling
// profiler (in-process, through node:inspector), the second stops it and writes the profile
// to PROFILE_OUT, then SIGUSR2 is answered by a line "profile written" on stderr.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new Session();
let running = false;
process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.connect();
    session.post('Profiler.enable', () => {
      session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US ?? 100) }, () => {
        session.post('Profiler.start', () => process.stderr.write('profile started\n'));
      });
    });
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, result) => {
    if (err) throw err;
    writeFileSync(process.env.PROFILE_OUT, JSON.stringify(result.profile));
    session.disconnect();
    process.stderr.write('profile written\n');
  });
});
