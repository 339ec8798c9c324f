// Reading a config file: JSON with every member named once, then parseConfig.
import { dirname, resolve } from 'node:path';
import { readJsonFile } from '../core/index.js';
import type { Config, ConfigDefaults } from './contract.js';
import { ConfigError } from './errors.js';
import { jsonSyntaxError } from './json-syntax.js';
import { parseConfig } from './parse.js';

/** The largest config file read (about 190,000 keys given by digest): a bound, not a target. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/** Read and validate a config file; the error names the file and every problem. */
export async function loadConfigFile(path: string, defaults: ConfigDefaults = {}): Promise<Config> {
  const file = resolve(path);
  const read = await readJsonFile(file, MAX_CONFIG_BYTES);
  if (read.kind === 'missing') throw new ConfigError(file, ['cannot read the config file: file not found']);
  if (read.kind === 'unreadable') throw new ConfigError(file, [`cannot read the config file: ${read.error.message}`]);
  let raw: unknown;
  let text: string;
  if (read.kind === 'ok') ({ value: raw, text } = read);
  else ({ value: raw, text } = parseWithoutBom(file, read.text, read.error));
  // JSON.parse keeps the last of two members with one name; in a config that would silently
  // drop, say, a whole first list of keys.
  const repeated = repeatedMembers(text);
  if (repeated.length > 0) throw new ConfigError(file, repeated.map((p) => `${p} is given more than once`));
  return parseConfig(raw, file, dirname(file), defaults);
}

const BOM = '\uFEFF';

/**
 * A text JSON.parse refused: accepted after all when a UTF-8 byte order mark was all that
 * stood in the way (editors on Windows write one; RFC 8259 section 8.1 lets a parser ignore
 * it), otherwise refused naming the line and column of the first error.
 */
function parseWithoutBom(file: string, text: string, error: Error): { value: unknown; text: string } {
  const body = text.startsWith(BOM) ? text.slice(1) : text;
  const syntax = jsonSyntaxError(body);
  if (syntax !== undefined) throw new ConfigError(file, [`not valid JSON at line ${syntax.line}, column ${syntax.column}: ${syntax.reason}`]);
  try {
    if (body !== text) return { value: JSON.parse(body), text: body };
  } catch (err) {
    error = err instanceof Error ? err : error;
  }
  // Well-formed, yet refused: the parser gave up for another reason (nesting too deep).
  throw new ConfigError(file, [`not valid JSON: ${error.message}`]);
}

interface Frame {
  readonly path: string;
  /** Member names seen, for an object; undefined for an array. */
  readonly names: Set<string> | undefined;
  expectName: boolean;
  last: string;
  index: number;
}

/** Paths of object members named twice in a text that JSON.parse has already accepted. */
export function repeatedMembers(text: string): string[] {
  const found: string[] = [];
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (top?.names && top.expectName) {
        const name = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.names.has(name)) found.push(top.path ? `${top.path}.${name}` : name);
        top.names.add(name);
        top.last = name;
        top.expectName = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const path = top === undefined ? '' : top.names ? (top.path ? `${top.path}.${top.last}` : top.last) : `${top.path}[${top.index}]`;
      stack.push({ path, names: c === '{' ? new Set() : undefined, expectName: c === '{', last: '', index: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',' && top) {
      if (top.names) top.expectName = true;
      else top.index++;
    }
  }
  return found;
}
