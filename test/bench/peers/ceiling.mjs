// Benchmark peer: the upper bound. Bare node:http answering GET /v1/pets?limit=20 with
// precomputed body bytes and the same set of headers the real servers send (rate limits, the
// next-page link, request id, no-store), in one writeHead and one end. No auth, no limiter, no store: whatever
// a real server does on top of this is the cost of its logic.
//
//   node peers/ceiling.mjs [--config FILE] [--data FILE | --memory] [--port 0]
import { createServer } from 'node:http';
import { announce, parseArgs, seedPet } from './common.mjs';

const opts = parseArgs();

const pets = [];
for (let id = 1; id <= 20; id++) pets.push({ id, ...seedPet(id) });
const body = Buffer.from(JSON.stringify(pets));
const notFound = Buffer.from(JSON.stringify({ code: 'not_found', message: 'Not found.', status: 404 }));

let listHeaders;
let notFoundHeaders;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/v1/pets?limit=20') {
    res.writeHead(200, listHeaders);
    res.end(body);
  } else {
    res.writeHead(404, notFoundHeaders);
    res.end(notFound);
  }
});

server.listen(opts.port, opts.host, () => {
  const base = `http://${opts.host}:${server.address().port}/v1`;
  const rate = {
    'X-RateLimit-Limit': '1000000000',
    'X-RateLimit-Remaining': '999999999',
    'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 1),
    'RateLimit-Policy': '"minute";q=1000000000;w=60, "day";q=1000000000000;w=86400',
    RateLimit: '"minute";r=999999999;t=1',
  };
  listHeaders = {
    'X-Request-Id': '00000000-0000-4000-8000-000000000000',
    'Cache-Control': 'no-store',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(body.length),
    ...rate,
    Link: `<${base}/pets?limit=20&cursor=20>; rel="next"`,
  };
  notFoundHeaders = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(notFound.length),
    ...rate,
  };
  announce(server, opts.host);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => server.close(() => process.exit(0)));
