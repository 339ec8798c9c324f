// Benchmark peer: the upper bound. Bare node:http answering with precomputed body bytes and
// the same set of headers the real servers send (rate limits, links, request id, no-store),
// in one writeHead and one end:
//   GET  /v1/pets?limit=20   the list page (its ceiling)
//   GET  /v1/pets/100        one pet, with the deprecation headers
//   POST /v1/pets            reads the whole body, answers 201 with a fixed pet: no parsing,
//                            no store, nothing durable (so no server that keeps its 201
//                            promise can reach it; see ceiling-store.mjs for that bound)
// No auth, no limiter, no store: whatever a real server does on top of this is the cost of
// its logic.
//
//   node peers/ceiling.mjs [--config FILE] [--data FILE | --memory] [--port 0]
import { createServer } from 'node:http';
import { announce, deprecationHeaders, fixedHeaders, parseArgs, seedPet } from './common.mjs';

const opts = parseArgs();

const pets = [];
for (let id = 1; id <= 20; id++) pets.push({ id, ...seedPet(id) });
const body = Buffer.from(JSON.stringify(pets));
const onePet = Buffer.from(JSON.stringify({ id: 100, ...seedPet(100) }));
const created = Buffer.from(JSON.stringify({ id: 201, name: 'bench-pet', categoryId: 3, status: 'available' }));
const notFound = Buffer.from(JSON.stringify({ code: 'not_found', message: 'Not found.', status: 404 }));

let listHeaders;
let getHeaders;
let createdHeaders;
let notFoundHeaders;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/v1/pets?limit=20') {
    res.writeHead(200, listHeaders);
    res.end(body);
  } else if (req.method === 'GET' && req.url === '/v1/pets/100') {
    res.writeHead(200, getHeaders);
    res.end(onePet);
  } else if (req.method === 'POST' && req.url === '/v1/pets') {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(201, createdHeaders);
      res.end(created);
    });
  } else {
    res.writeHead(404, notFoundHeaders);
    res.end(notFound);
  }
});

server.listen(opts.port, opts.host, () => {
  const base = `http://${opts.host}:${server.address().port}/v1`;
  const fixed = fixedHeaders();
  const common = (bytes) => ({ ...fixed, 'Content-Length': String(bytes.length) });
  listHeaders = { ...common(body), Link: `<${base}/pets?limit=20&cursor=20>; rel="next"` };
  getHeaders = { ...common(onePet), ...deprecationHeaders(base) };
  createdHeaders = { ...common(created), Location: `${base}/pets/201` };
  notFoundHeaders = common(notFound);
  delete notFoundHeaders['X-Request-Id'];
  delete notFoundHeaders['Cache-Control'];
  announce(server, opts.host);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => server.close(() => process.exit(0)));
