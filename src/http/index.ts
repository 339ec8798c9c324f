// The HTTP layer's face: the request listener, and the answers to what never reaches it.
export { createApp } from './lifecycle.js';
export type { AppDeps, RequestListener } from './exchange.js';
export { answerAfterHalfClose, answerClientError, orderPipelined, refuseConnect, takeTurns } from './connection/index.js';
