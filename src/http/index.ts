// The HTTP layer's face: the request listener, and the answers to what never reaches it.
export { createApp } from './lifecycle.js';
export type { AppDeps, RequestListener } from './exchange.js';
export { answerClientError, refuseConnect } from './client-errors.js';
export { orderPipelined } from './pipeline.js';
export { takeTurns } from './turns.js';
export { answerAfterHalfClose } from './node-internals.js';
