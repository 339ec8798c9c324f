// What kept strings and Buffers really cost, for the caches that are bounded in bytes (the
// read cache of the PostgreSQL store, the HTTP layer's byte caches). Each figure is an upper
// bound on what V8 and node hold for it on a 64-bit build, so a bound counted with them holds
// whatever the names are made of: a name of 256 CJK characters costs twice its length, not its
// length, and a cached Buffer is its own allocation, never a slice that keeps a shared 8 KiB
// pool slab alive.

const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * Bytes a string takes on the heap: a 16-byte header, then one byte per character when every
 * character is ASCII and two otherwise (V8 stores a string with any character past U+00FF in
 * two bytes per character; Latin-1 ones are counted at two as well, to stay on the safe side),
 * rounded up to 8. A string built by concatenation starts as a tree of pieces that V8 flattens
 * once it is written out: `STRING_BUILT_SLACK` covers the tree's nodes until then.
 */
export function stringBytes(s: string): number {
  const width = NOT_ASCII.test(s) ? 2 : 1;
  return (16 + s.length * width + 7) & ~7;
}

/** Nodes of a concatenated string before V8 flattens it (a pet's JSON text: a few pieces). */
export const STRING_BUILT_SLACK = 256;

/**
 * What a Buffer costs beside its bytes: the Buffer and ArrayBuffer objects on the heap and the
 * backing store's bookkeeping outside it (measured at about 190 bytes on node 20; counted high).
 */
export const BUFFER_OVERHEAD = 320;

/**
 * `bytes` as a Buffer that owns its memory. Buffer.from() puts anything under 4 KiB into a
 * slice of a shared 8 KiB slab, and a kept slice keeps the whole slab alive: a cache of small
 * answers could hold 8 KiB for each entry it counts as a few hundred bytes. A kept answer is
 * therefore copied out of the slab once, when it is kept (a miss), never on a hit.
 */
export function ownedBuffer(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}

/** What a kept Buffer costs (it must own its memory: ownedBuffer). */
export function bufferBytes(bytes: Buffer): number {
  return bytes.length + BUFFER_OVERHEAD;
}

/**
 * A fresh copy of a string cut out of a request line (the query string, a path parameter),
 * which owns its characters: such a cut may be a slice that keeps the whole line alive. The
 * copy, decoded afresh, costs what stringBytes() counts for it. (Text from a request line has
 * no lone surrogates, the one thing a UTF-8 round trip would change.)
 */
export function ownedString(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}
