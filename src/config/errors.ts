// A config that cannot be used: the source is named, and every problem listed at once.
import { StartError } from '../core/index.js';

/** A start (or reload) refused for its config: a StartError of kind `config`. */
export class ConfigError extends StartError {
  override name = 'ConfigError';
  /** The config file's absolute path, or a description of the object given. */
  readonly source: string;
  /** Every problem found, each naming its field. */
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super('config', `${source}: invalid config:\n  - ${problems.join('\n  - ')}`);
    this.source = source;
    this.problems = problems;
  }
}
