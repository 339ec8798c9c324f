// Small text helpers.

/** Client input echoed in a message, cut to at most `max` characters (marked with "..."). */
export function clip(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}
