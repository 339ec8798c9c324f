// The HTTP layer's face: the request listener, and the answers to what never reaches it.
export { createApp } from './app.js';
export type { AppDeps, RequestListener } from './app.js';
export { answerClientError, refuseConnect } from './client-errors.js';
export { orderPipelined } from './pipeline.js';
