// stdout and stderr that a closed reader cannot take the service down with. A harness that
// reads the ready line and closes the pipe, or a log collector that restarts, makes the next
// write fail (EPIPE); node reports that as an 'error' event on the stream, and an 'error'
// event nobody listens to ends the process.
//
// The two writers are per process, like the streams they guard, so that every logger of
// every instance shares one listener per stream.

export type Write = (chunk: string) => void;

let stdout: Write | undefined;
let stderr: Write | undefined;

/**
 * Writes to `stream` until it fails; from then on what it is given is dropped (a log line
 * is not worth the service), and `onFail` is told once.
 */
export function guardedWriter(stream: NodeJS.WritableStream, onFail: (err: NodeJS.ErrnoException) => void = () => undefined): Write {
  let failed = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    onFail(err);
  });
  return (chunk) => {
    if (!failed) stream.write(chunk);
  };
}

/** process.stdout, guarded; a failure is reported once on stderr. */
export function safeStdout(): Write {
  stdout ??= guardedWriter(process.stdout, (err) => {
    safeStderr()(`petstore: stdout failed (${err.code ?? err.message}); log lines are dropped from now on, the service keeps serving\n`);
  });
  return stdout;
}

/** process.stderr, guarded. */
export function safeStderr(): Write {
  stderr ??= guardedWriter(process.stderr);
  return stderr;
}
