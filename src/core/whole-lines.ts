// Log output shared by several processes (the workers of --workers N write to one stdout).
import type { Write } from './stdio.js';

/**
 * Writes of at most PIPE_BUF (4096 bytes) to a pipe are atomic: the workers share the
 * primary's stdout, so a batch of log lines goes out in whole-line pieces of that size, and no
 * line of one worker is cut by another's.
 */
export function wholeLines(write: Write, max = 4096): Write {
  return (chunk) => {
    let rest = chunk;
    while (rest.length > max) {
      const cut = rest.lastIndexOf('\n', max - 1);
      const end = cut === -1 ? rest.indexOf('\n') : cut;
      if (end === -1) break;
      write(rest.slice(0, end + 1));
      rest = rest.slice(end + 1);
    }
    if (rest !== '') write(rest);
  };
}
