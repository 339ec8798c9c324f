// What a key name may hold. A name is printed by `keys list`, in log lines and in messages,
// so it must print as what it is: a newline would make a fake row, a terminal escape could
// clear or recolour the operator's screen, a bidi control would reorder what follows it
// (CVE-2021-42574, "Trojan Source").

/**
 * Characters a name may not hold: C0 controls, DEL and C1 controls; the line and paragraph
 * separators; the bidi controls (the marks ALM, LRM, RLM, the embeddings and overrides
 * U+202A-U+202E, the isolates U+2066-U+2069); and a lone surrogate, which is no character.
 */
const NOT_PRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\p{Surrogate}/u;

/** Why `name` cannot be a key name, or undefined when it can (any non-empty printable text). */
export function keyNameProblem(name: string): string | undefined {
  if (name === '') return 'must be a non-empty string';
  const found = NOT_PRINTABLE.exec(name);
  if (found === null) return undefined;
  const code = (found[0].codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0');
  return `holds U+${code} at position ${found.index + 1}: names must be printable characters ` +
    '(no control characters, line separators or bidi controls)';
}

/** A name made safe to print, whatever it holds: each character the rule refuses as \uNNNN. */
export function escapeKeyName(name: string): string {
  return name.replace(new RegExp(NOT_PRINTABLE.source, 'gu'), (c) => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, '0')}`);
}
