// The connection layer's types: what it wraps (a request listener), and what the app above
// may keep per connection on the connection's one state object (state.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What node:http calls for each request it parses. */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A request listener that may ask, per request, for its connection's pipelined requests to
 * be handled one at a time (each once the one before has been answered) instead of only
 * behind a non-safe request. The app asks while a test harness may break a connection
 * (/__admin/faults): a request pipelined behind an answer that ends the connection must not
 * be handled, since its answer could never reach the client.
 */
export interface OrderedListener extends RequestListener {
  readonly oneAtATime?: () => boolean;
}
