// Log output shared by several processes (the workers of --workers N write to one stdout).
import type { ByteWrite } from './stdio.js';

/**
 * Writes of at most PIPE_BUF (4096 bytes) to a pipe are atomic: the workers share the
 * primary's stdout, so a batch of log lines goes out in whole-line pieces of that size, and no
 * line of one worker is cut by another's. A line longer than that goes out whole, on its own.
 */
export function wholeLines(write: ByteWrite, max = 4096): ByteWrite {
  return (bytes) => {
    let rest = bytes;
    while (rest.length > max) {
      const cut = rest.lastIndexOf(10, max - 1);
      const end = cut === -1 ? rest.indexOf(10) : cut;
      if (end === -1) break;
      write(rest.subarray(0, end + 1));
      rest = rest.subarray(end + 1);
    }
    if (rest.length > 0) write(rest);
  };
}
