// Benchmark peer: the bound for durable creates with the shared store. Bare node:http that
// reads the body, JSON.parse, petstore's own durable store (group commit, 201 only once on
// disk), and answers with the stored JSON and the same set of headers. No auth, no limiter,
// no validation, no Error bodies: only what any server keeping the 201 promise with this
// store must do. The Fastify and Express peers use the same store, so no server can be
// faster than this row by more than its own HTTP handling, whatever its framework.
//
//   node peers/ceiling-store.mjs [--config FILE] [--data FILE | --memory] [--port 0]
import { createServer } from 'node:http';
import { announce, fixedHeaders, openStore, parseArgs } from './common.mjs';

const opts = parseArgs();
const store = await openStore(opts);
let base;
let fixed;

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/pets') {
    res.writeHead(404, { 'Content-Length': '0' });
    res.end();
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const pet = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    store.create({ name: pet.name, categoryId: pet.categoryId, status: pet.status }).then((stored) => {
      res.writeHead(201, { ...fixed, 'Content-Length': String(Buffer.byteLength(stored.json)), Location: `${base}/pets/${stored.pet.id}` });
      res.end(stored.json);
    });
  });
});

server.listen(opts.port, opts.host, () => {
  base = `http://${opts.host}:${server.address().port}/v1`;
  fixed = fixedHeaders();
  announce(server, opts.host);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => server.close(() => store.close().then(() => process.exit(0))));
