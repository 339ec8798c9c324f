// The connection layer's face: fair turns, order behind non-safe requests, answers to what
// node:http cannot parse, one state object per connection, and node's private state.
export type { OrderedListener, RequestListener, TurnsListener } from './contract.js';
export { takeTurns } from './turns.js';
export { orderPipelined } from './pipeline.js';
export { answerClientError, refuseConnect } from './client-errors.js';
export { connectionOf } from './state.js';
export { answerAfterHalfClose, holdReading, onCloseAfterAnswer } from './node-internals.js';
