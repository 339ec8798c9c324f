// The HTTP layer's app: the request listener. The lifecycle it runs is in lifecycle.ts.
export { createApp } from './lifecycle.js';
export type { AppDeps, RequestListener } from './exchange.js';
