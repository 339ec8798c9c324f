// A fixed-bucket histogram: one typed array of counts and a sum, so that an observation
// allocates nothing.

/** Request durations, in seconds: from a tenth of a millisecond (a cached list) to seconds. */
export const DURATION_BOUNDS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Store batch sizes, in operations (group commit shares one write among many creates). */
export const BATCH_BOUNDS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000];

export class Histogram {
  readonly bounds: readonly number[];
  /** counts[i]: observations v with bounds[i-1] < v <= bounds[i]; the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && v > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += v;
  }

  get count(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }
}
