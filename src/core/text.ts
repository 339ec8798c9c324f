// Small text helpers.

/** Client input echoed in a message, cut to at most `max` characters (marked with "..."). */
export function clip(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/**
 * Text from a file, made safe for a terminal and a log line: every character but printable
 * ASCII escaped (\xNN, \uNNNN), at most `max` characters kept. A JSON parse error quotes the
 * text around the error, which from a binary file is raw bytes and escape sequences.
 */
export function printable(text: string, max = 200): string {
  let out = '';
  let i = 0;
  for (; i < text.length && out.length < max; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) out += text[i];
    else if (c < 0x100) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return i < text.length ? `${out}...` : out;
}
