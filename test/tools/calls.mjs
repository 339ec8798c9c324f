// @ts-check
// Calls every operation of the API through a client generated from the OpenAPI document:
// openapi-typescript turns the document into types (.generated/api.d.ts) and openapi-fetch is
// the runtime client. generated-client.mjs type-checks this file against those types first,
// so a path, parameter or body that the document does not describe is a compile error.
import createClient from 'openapi-fetch';

/** @typedef {import('./.generated/api.js').paths} Paths */
/** @typedef {import('./.generated/api.js').components['schemas']['Pet']} Pet */
/** @typedef {{ operationId: string, method: string, path: string, status: number, expected: number }} Call */

/**
 * @param {string} baseUrl the base URL ending in /v1
 * @param {string} key a demo API key
 * @returns {Promise<Call[]>}
 */
export async function callEveryOperation(baseUrl, key) {
  /** @type {import('openapi-fetch').Client<Paths>} */
  const client = createClient({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  /** @type {import('openapi-fetch').Client<Paths>} */
  const anonymous = createClient({ baseUrl });
  /** @type {Call[]} */
  const calls = [];
  /** @param {string} operationId @param {string} method @param {string} path @param {Response} response @param {number} expected */
  const record = (operationId, method, path, response, expected) => {
    calls.push({ operationId, method, path, status: response.status, expected });
  };

  // createPet: 201 with the Pet; a body without categoryId: 400 (sent untyped on purpose).
  const created = await client.POST('/pets', { body: { name: 'Rex', categoryId: 1, status: 'available' } });
  record('createPet', 'POST', '/pets', created.response, 201);
  /** @type {Pet | undefined} */
  const rex = created.data;
  if (!rex || typeof rex.id !== 'number') throw new Error(`createPet returned no Pet: ${JSON.stringify(created.error)}`);
  const invalid = await client.POST('/pets', { body: /** @type {any} */ ({ name: 'NoCategory' }) });
  record('createPet', 'POST', '/pets', invalid.response, 400);
  if (invalid.error?.code !== 'invalid_request') throw new Error(`expected an Error body, got ${JSON.stringify(invalid.error)}`);
  await client.POST('/pets', { body: { name: 'Tom', categoryId: 2, status: 'sold' } });

  // listPets: 200 with an array of Pet, limit and status as typed query parameters.
  const list = await client.GET('/pets', { params: { query: { limit: 10, status: 'available' } } });
  record('listPets', 'GET', '/pets?limit=10&status=available', list.response, 200);
  const names = (list.data ?? []).map((p) => p.name);
  if (names.join() !== 'Rex') throw new Error(`listPets returned ${JSON.stringify(list.data)}`);
  const page = await client.GET('/pets', { params: { query: { limit: 1 } } });
  record('listPets', 'GET', '/pets?limit=1', page.response, 200);
  const next = /<([^>]+)>; rel="next"/.exec(page.response.headers.get('link') ?? '')?.[1];
  const cursor = next ? new URL(next).searchParams.get('cursor') ?? undefined : undefined;
  if (cursor === undefined) throw new Error('a full page carries a next link with a cursor');
  const second = await client.GET('/pets', { params: { query: { limit: 1, cursor } } });
  record('listPets', 'GET', `/pets?limit=1&cursor=${cursor}`, second.response, 200);
  if (second.data?.[0]?.name !== 'Tom') throw new Error(`the second page is ${JSON.stringify(second.data)}`);

  // getPet (deprecated): 200, and 404 for an unknown id.
  const one = await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } });
  record('getPet', 'GET', `/pets/${rex.id}`, one.response, 200);
  if (one.data?.name !== 'Rex' || !one.response.headers.get('sunset')) throw new Error('getPet: wrong body or no Sunset header');
  const missing = await client.GET('/pets/{petId}', { params: { path: { petId: 999999 } } });
  record('getPet', 'GET', '/pets/999999', missing.response, 404);

  // listOrders: its shape is not published, so 501 not_implemented.
  const orders = await client.GET('/store/orders');
  record('listOrders', 'GET', '/store/orders', orders.response, 501);

  // getOpenApi: public, and typed (the fields a client reads, not an empty object).
  const doc = await anonymous.GET('/openapi.json');
  record('getOpenApi', 'GET', '/openapi.json (no key)', doc.response, 200);
  if (!doc.data?.openapi.startsWith('3.1.') || doc.data.servers?.[0]?.url !== baseUrl) {
    throw new Error(`getOpenApi: not a 3.1 document whose first server is ${baseUrl}`);
  }

  // HEAD of every GET: the same statuses and headers, no body.
  const heads = [
    ['listPetsHead', '/pets', await client.HEAD('/pets', { params: { query: { limit: 1 } } }), 200],
    ['getPetHead', `/pets/${rex.id}`, await client.HEAD('/pets/{petId}', { params: { path: { petId: rex.id } } }), 200],
    ['listOrdersHead', '/store/orders', await client.HEAD('/store/orders'), 501],
    ['getOpenApiHead', '/openapi.json (no key)', await anonymous.HEAD('/openapi.json'), 200],
  ];
  for (const [operationId, path, result, expected] of /** @type {Array<[string, string, { response: Response }, number]>} */ (heads)) {
    record(operationId, 'HEAD', path, result.response, expected);
  }

  // Without a key every keyed operation is 401 with an Error body.
  const noKey = await anonymous.GET('/pets');
  record('listPets', 'GET', '/pets (no key)', noKey.response, 401);
  if (noKey.error?.status !== 401) throw new Error(`expected an Error body, got ${JSON.stringify(noKey.error)}`);
  // Error.code is the registry's enum: a switch over it is checked by the compiler.
  switch (noKey.error.code) {
    case 'unauthorized': break;
    default: throw new Error(`expected unauthorized, got ${noKey.error.code}`);
  }
  return calls;
}

/**
 * Never called: calls the generated types must reject. If the document stopped describing a
 * parameter's type, a @ts-expect-error below would be unused and the type check would fail.
 * @param {import('openapi-fetch').Client<Paths>} client
 */
export async function wrongCalls(client) {
  // @ts-expect-error limit is an integer
  await client.GET('/pets', { params: { query: { limit: 'ten' } } });
  // @ts-expect-error status is one of available, pending, sold
  await client.GET('/pets', { params: { query: { status: 'lost' } } });
  // @ts-expect-error petId is required
  await client.GET('/pets/{petId}', { params: { path: {} } });
  // @ts-expect-error a NewPet needs categoryId
  await client.POST('/pets', { body: { name: 'x' } });
  // @ts-expect-error there is no such path
  await client.GET('/pets/all');
  const { error } = await client.GET('/pets');
  // @ts-expect-error Error.code is one of the registry's codes, not any string
  if (error?.code === 'no_such_code') return;
  const { data } = await client.GET('/openapi.json');
  // @ts-expect-error the document's openapi field is a string
  if (data?.openapi === 1) return;
}
