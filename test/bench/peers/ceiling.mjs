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
// `--work N` (the `ceiling+work` server of the benchmarks) first runs N rounds of a small
// integer loop per request: the same answers at a chosen extra cost in instructions (about 13
// a round on node 20; count it with instructions.mjs, INSTR_SERVERS=ceiling,ceiling+work). A
// server that does N rounds' worth more than the ceiling can reach, on this machine and day,
// at best what ceiling+work reaches in the same run: it tells a gap in code from the machine's.
//
//   node peers/ceiling.mjs [--config FILE] [--data FILE | --memory] [--port 0] [--work N]
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

const WORK = opts.work;
let kept = 0;
/** N rounds of integer arithmetic, its result kept so the loop cannot be left out. */
function work() {
  let a = kept;
  for (let i = 0; i < WORK; i++) a = (a * 31 + i) | 0;
  kept = a;
}

const server = createServer((req, res) => {
  if (WORK > 0) work();
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
