// Faults chosen per request, without arming anything: with `"admin": {"preferFaults": true}`,
// a request's `Prefer` header (RFC 7240) may ask for `code=NNN` (answer that status),
// `delay=MS` (wait first) or `fault=reset|empty|truncated` (break the connection), and the
// answer says which were applied in `Preference-Applied`. RFC 7240 section 2: a server
// ignores a preference it does not know or cannot honour, so an unknown token, a value out of
// range or a malformed one is passed over, never refused.
import { CONNECTION_FAULTS, MAX_FAULT_DELAY_MS, type ConnectionFault } from './fault-spec.js';

/** What the Prefer header of one request asks for (each field only when valid). */
export interface Preferred {
  /** An error status to answer with, 400..599. */
  readonly code: number | undefined;
  /** Wait this long first, 0..MAX_FAULT_DELAY_MS ms. */
  readonly delayMs: number | undefined;
  /** Break the connection this way (not with `code`: `code` wins). */
  readonly fault: ConnectionFault | undefined;
  /** The Preference-Applied value: the preferences honoured, as `name=value, ...`. */
  readonly applied: string;
}

/** The longest Prefer value looked at; the rest is not read (a preference there is ignored). */
export const MAX_PREFER_LENGTH = 1024;

/**
 * The preferences this service honours in a Prefer value (node joins repeated Prefer fields
 * with ", ", which is the same list); undefined when none is there.
 *
 * Grammar (RFC 7240 section 2): `preference *( "," preference )`, a preference being
 * `token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )`, word = token or quoted-string.
 * Parameters are not used by any of ours and are skipped. The first occurrence of a
 * preference counts (section 2: a later one of the same name is ignored).
 */
export function parsePrefer(value: string): Preferred | undefined {
  let code: number | undefined;
  let delayMs: number | undefined;
  let fault: ConnectionFault | undefined;
  const seen = new Set<string>();
  for (const item of splitOutsideQuotes(value.slice(0, MAX_PREFER_LENGTH), ',')) {
    const [head = ''] = splitOutsideQuotes(item, ';');
    const eq = head.indexOf('=');
    const name = (eq === -1 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (seen.has(name)) continue;
    seen.add(name);
    if (eq === -1) continue; // ours all take a value
    const word = unquote(head.slice(eq + 1).trim());
    if (name === 'code' && /^[45][0-9]{2}$/.test(word)) code = Number(word);
    else if (name === 'delay' && /^[0-9]{1,5}$/.test(word) && Number(word) <= MAX_FAULT_DELAY_MS) delayMs = Number(word);
    else if (name === 'fault' && (CONNECTION_FAULTS as readonly string[]).includes(word.toLowerCase())) fault = word.toLowerCase() as ConnectionFault;
  }
  if (code !== undefined) fault = undefined;
  if (code === undefined && delayMs === undefined && fault === undefined) return undefined;
  const applied: string[] = [];
  if (delayMs !== undefined) applied.push(`delay=${delayMs}`);
  if (code !== undefined) applied.push(`code=${code}`);
  if (fault !== undefined) applied.push(`fault=${fault}`);
  return { code, delayMs, fault, applied: applied.join(', ') };
}

/** Splits on `sep` where it is not inside a quoted-string (which may hold it, escaped or not). */
function splitOutsideQuotes(text: string, sep: string): string[] {
  const out: string[] = [];
  let from = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === sep) {
      out.push(text.slice(from, i));
      from = i + 1;
    }
  }
  out.push(text.slice(from));
  return out;
}

/** A word's value: a quoted-string without its quotes and escapes, or the token as it is. */
function unquote(word: string): string {
  if (word.length < 2 || word[0] !== '"' || word[word.length - 1] !== '"') return word;
  return word.slice(1, -1).replace(/\\(.)/g, '$1');
}
