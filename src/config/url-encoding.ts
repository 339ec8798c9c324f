// A URL given on the command line, in the environment or in the config: its user name,
// password and database must be valid percent-encoding, checked where it is known which setting
// gave it, so the message names that setting and the part instead of the driver's "URI malformed".

/**
 * Why a URL given as `setting` cannot be decoded, naming the setting and the part (never its
 * text: it may be a password), or undefined. The drivers decode the user name, password and
 * database with decodeURIComponent, whose own message is only "URI malformed".
 */
export function percentEncodingProblem(url: string, setting: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined; // not a URL at all: the URL's own check says so
  }
  const parts: Array<[string, string]> = [['user name', u.username], ['password', u.password], ['database', u.pathname]];
  for (const [part, text] of parts) {
    try {
      decodeURIComponent(text);
    } catch {
      return `${setting}: the ${part} in the URL has a bad percent-encoding: a % must be followed by two hex digits ` +
        '(write %25 for a % itself, %40 for @, %3A for :, %2F for /)';
    }
  }
  return undefined;
}
