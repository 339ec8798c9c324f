// One startup measurement, for hyperfine: starts TARGET (a server name from lib.mjs, or
// node-empty for `node -e ""`), waits for its first 200 on GET /v1/pets?limit=20 (or its exit),
// kills it and exits. Prints the in-process measurement in ms on stdout.
//
//   node startup-probe.mjs petstore|fastify|express|ceiling|node-empty
import { measureStartup } from './lib.mjs';

const ms = await measureStartup(process.argv[2]);
process.stdout.write(`${ms.toFixed(2)}\n`);
