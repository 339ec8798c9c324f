// Editing a config file's text in place: the `keys` array is found by walking the JSON text
// (already accepted by JSON.parse), and an element is inserted or cut out, so that every
// other byte of the file, whitespace and member order included, stays as it was.

interface Span {
  readonly start: number;
  readonly end: number;
}

interface Member {
  readonly name: string;
  /** Where the member's name (its opening quote) starts. */
  readonly nameStart: number;
  readonly value: Span;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return i;
}

/** The index just past the string that opens at i. */
function skipString(text: string, i: number): number {
  let j = i + 1;
  while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j + 1;
}

/** The index just past the value that starts at i (after whitespace). */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') j = skipString(text, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if ((d === '}' || d === ']') && --depth === 0) return j + 1;
    }
    return text.length;
  }
  let j = i;
  while (j < text.length && !/[\s,\]}]/.test(text[j] as string)) j++;
  return j;
}

/** The members of the top-level object, in file order. */
export function topMembers(text: string): { open: number; members: Member[] } {
  const open = skipWs(text, 0);
  const members: Member[] = [];
  let i = skipWs(text, open + 1);
  while (text[i] === '"') {
    const nameEnd = skipString(text, i);
    const name = JSON.parse(text.slice(i, nameEnd)) as string;
    const valueStart = skipWs(text, skipWs(text, nameEnd) + 1); // past the colon
    const valueEnd = skipValue(text, valueStart);
    members.push({ name, nameStart: i, value: { start: valueStart, end: valueEnd } });
    i = skipWs(text, valueEnd);
    if (text[i] === ',') i = skipWs(text, i + 1);
  }
  return { open, members };
}

/** The elements of the array that opens at `open`. */
function arrayElements(text: string, open: number): Span[] {
  const out: Span[] = [];
  let i = skipWs(text, open + 1);
  while (text[i] !== ']' && i < text.length) {
    const end = skipValue(text, i);
    out.push({ start: i, end });
    i = skipWs(text, end);
    if (text[i] === ',') i = skipWs(text, i + 1);
  }
  return out;
}

/** `entry` (JSON text) appended to the top-level `keys` array, made when absent. */
export function insertKey(text: string, entry: string): string {
  const { open, members } = topMembers(text);
  const keys = members.find((m) => m.name === 'keys');
  if (keys === undefined) {
    const last = members.at(-1);
    if (last === undefined) return `${text.slice(0, open + 1)}"keys": [${entry}]${text.slice(open + 1)}`;
    // The new member goes after the last one, indented as that one is.
    const before = members.length > 1 ? text.slice(commaAfter(text, (members.at(-2) as Member).value.end) + 1, last.nameStart) : text.slice(open + 1, last.nameStart);
    return `${text.slice(0, last.value.end)},${before}"keys": [${entry}]${text.slice(last.value.end)}`;
  }
  const elements = arrayElements(text, keys.value.start);
  const last = elements.at(-1);
  if (last === undefined) return `${text.slice(0, keys.value.start + 1)}${entry}${text.slice(keys.value.start + 1)}`;
  // Between the comma before the last element and the element: the indentation to repeat.
  const before = elements.length > 1
    ? text.slice(commaAfter(text, (elements.at(-2) as Span).end) + 1, last.start)
    : text.slice(keys.value.start + 1, last.start);
  return `${text.slice(0, last.end)},${before}${entry}${text.slice(last.end)}`;
}

/** The text without the `index`-th element of the top-level `keys` array (and its separator). */
export function removeKey(text: string, index: number): string {
  const keys = topMembers(text).members.find((m) => m.name === 'keys');
  if (keys === undefined) throw new RangeError('the config has no keys');
  const elements = arrayElements(text, keys.value.start);
  const gone = elements[index];
  if (gone === undefined) throw new RangeError(`no key at index ${index}`);
  if (elements.length === 1) return `${text.slice(0, keys.value.start + 1)}${text.slice(keys.value.end - 1)}`;
  // Cut from the end of the one before (its comma and the whitespace go too), or, for the
  // first, up to the start of the next.
  if (index > 0) return text.slice(0, (elements[index - 1] as Span).end) + text.slice(gone.end);
  return text.slice(0, gone.start) + text.slice((elements[1] as Span).start);
}

function commaAfter(text: string, i: number): number {
  return text.indexOf(',', i);
}
