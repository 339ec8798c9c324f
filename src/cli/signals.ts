// The three signals the command line answers (stop, stop, reload), installed together and
// removed together: by the single process, the cluster primary and each worker alike.

export interface SignalHandlers {
  readonly SIGTERM: () => void;
  readonly SIGINT: () => void;
  readonly SIGHUP: () => void;
}

/** Installs the handlers at once (before the ready line: see main.ts); returns their removal. */
export function onSignals(handlers: SignalHandlers): () => void {
  const names = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
  for (const name of names) process.on(name, handlers[name]);
  return () => {
    for (const name of names) process.off(name, handlers[name]);
  };
}
