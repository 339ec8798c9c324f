// Where a JSON text stops being JSON, as a line and a column, for config file messages.
// JSON.parse says "at position N" only for some errors, and for others quotes the text around
// the error, which in a config can be a key in clear: so the text is scanned here instead
// (RFC 8259), and the message names the place and what was expected, never the text.

export interface JsonSyntaxError {
  /** 1-based line (lines end at \n, \r\n or \r). */
  readonly line: number;
  /** 1-based column, in characters (UTF-16 code units) from the start of the line. */
  readonly column: number;
  readonly reason: string;
}

const WS = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})/y;

/** The first syntax error of `text`, or undefined when it is JSON. Never recursive. */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0;
  const fail = (reason: string): JsonSyntaxError => ({ ...lineAndColumn(text, i), reason });
  const skipWs = (): void => {
    while (i < text.length && WS.has(text[i] as string)) i++;
  };
  const found = (): string => (i >= text.length ? 'the end of the file' : describeChar(text.charCodeAt(i)));
  // What each open container expects next: a value, a member name, or a separator.
  const stack: Array<'[' | '{'> = [];
  let expect: 'value' | 'first-value' | 'name' | 'first-name' | 'after' = 'value';
  for (;;) {
    skipWs();
    const c = text[i];
    if (expect === 'value' || expect === 'first-value') {
      if (expect === 'first-value' && c === ']') { i++; stack.pop(); expect = 'after'; continue; }
      if (c === '{') { i++; stack.push('{'); expect = 'first-name'; continue; }
      if (c === '[') { i++; stack.push('['); expect = 'first-value'; continue; }
      if (c === '"') {
        const problem = scanString();
        if (problem !== undefined) return problem;
      } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return fail(`a malformed number: found ${found()}`);
        i = NUMBER.lastIndex;
      } else if (text.startsWith('true', i)) i += 4;
      else if (text.startsWith('false', i)) i += 5;
      else if (text.startsWith('null', i)) i += 4;
      else return fail(`expected a value, found ${found()}`);
      expect = 'after';
    } else if (expect === 'name' || expect === 'first-name') {
      if (expect === 'first-name' && c === '}') { i++; stack.pop(); expect = 'after'; continue; }
      if (c !== '"') return fail(`expected a member name in double quotes, found ${found()}`);
      const problem = scanString();
      if (problem !== undefined) return problem;
      skipWs();
      if (text[i] !== ':') return fail(`expected ':' after the member name, found ${found()}`);
      i++;
      expect = 'value';
    } else {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        return i < text.length ? fail(`expected the end of the file after the JSON value, found ${found()}`) : undefined;
      }
      const close = top === '{' ? '}' : ']';
      if (c === ',') { i++; expect = top === '{' ? 'name' : 'value'; continue; }
      if (c === close) { i++; stack.pop(); continue; }
      return fail(`expected ',' or '${close}', found ${found()}`);
    }
  }

  function scanString(): JsonSyntaxError | undefined {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) return fail('a string is not closed before the end of the file');
      const code = text.charCodeAt(i);
      if (code === 0x22) { i++; return undefined; }
      if (code < 0x20) return fail(`${describeChar(code)} inside a string (write it escaped)`);
      if (code === 0x5c) {
        ESCAPE.lastIndex = i;
        if (!ESCAPE.test(text)) return fail('an invalid escape sequence in a string');
        i = ESCAPE.lastIndex;
      } else i++;
    }
  }
}

/** A character named without echoing the text: letters and digits could be part of a key. */
function describeChar(code: number): string {
  const c = String.fromCharCode(code);
  if (/[A-Za-z]/.test(c)) return 'a letter';
  if (/[0-9]/.test(c)) return 'a digit';
  if (code >= 0x21 && code <= 0x7e) return `'${c}'`;
  if (code === 0xfeff) return 'a byte order mark (U+FEFF)';
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let j = 0; j < offset && j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x0a || (c === 0x0d && text.charCodeAt(j + 1) !== 0x0a)) {
      line++;
      start = j + 1;
    }
  }
  return { line, column: offset - start + 1 };
}
