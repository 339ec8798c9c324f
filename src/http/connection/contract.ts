// The connection layer's types: what it wraps (a request listener), and what the app above
// may keep per connection on the connection's one state object (state.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What node:http calls for each request it parses. */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A request listener that may ask, per request, for the requests pipelined behind it on its
 * connection to wait until it has been answered, as behind a non-safe request. The app asks
 * for a request whose answer a test harness may break (/__admin/faults armed where the
 * request goes: the root or its namespace): a request pipelined behind an answer that ends
 * the connection must not be handled, since its answer could never reach the client.
 */
export interface OrderedListener extends RequestListener {
  readonly oneAtATime?: (req: IncomingMessage) => boolean;
}

/**
 * The fair turns' listener (turns.ts), and what it asks to be told of each new connection
 * before node reads it (node:http's 'connection' event).
 */
export interface TurnsListener extends RequestListener {
  readonly admit: (socket: Socket) => void;
}
