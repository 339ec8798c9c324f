// The command line's face: main(argv) -> exit code, and its help text.
export { main } from './main.js';
export { USAGE, invokedAs } from './args.js';
export type { Io } from './args.js';
