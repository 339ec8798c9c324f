// The plans a config gets when it names none.
import type { Limits } from '../core/index.js';

export const DEFAULT_PLANS: ReadonlyMap<string, Limits> = new Map<string, Limits>([
  ['free', Object.freeze({ perMinute: 60, perDay: 1000 })],
  ['pro', Object.freeze({ perMinute: 300, perDay: 10000 })],
  ['business', Object.freeze({ perMinute: 1000, perDay: 100000 })],
]);
