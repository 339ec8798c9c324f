// A config that cannot be used: the source is named, and every problem listed at once.

export class ConfigError extends Error {
  readonly source: string;
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`${source}: invalid config:\n  - ${problems.join('\n  - ')}`);
    this.source = source;
    this.problems = problems;
  }
}
