// How often a health test failed over its last N verdicts. A random source fails each
// test only at the test's false-alarm rate; a source whose failures are far above it is
// not random, even when most of its blocks pass (a byte counter failed 107 of its FIPS
// 140-2 windows and had the rest fed). The limit is set so that a random source reaches
// it with a probability below 2^-40 (docs/feeder.md).
export class FailureWindow {
  private readonly verdicts: Uint8Array;
  private next = 0;
  private filled = 0;
  private failed = 0;

  constructor(
    /** Verdicts remembered. */
    readonly size: number,
    /** Failures among them that make the source untrustworthy. */
    readonly limit: number,
  ) {
    this.verdicts = new Uint8Array(size);
  }

  /** Records one verdict; true when the failures in the window have reached the limit. */
  record(failed: boolean): boolean {
    if (this.filled === this.size) this.failed -= this.verdicts[this.next]!;
    else this.filled += 1;
    this.verdicts[this.next] = failed ? 1 : 0;
    this.failed += failed ? 1 : 0;
    this.next = (this.next + 1) % this.size;
    return this.failed >= this.limit;
  }

  /** Failures among the verdicts remembered. */
  get failures(): number {
    return this.failed;
  }

  /** Verdicts remembered so far (up to `size`). */
  get count(): number {
    return this.filled;
  }

  reset(): void {
    this.verdicts.fill(0);
    this.next = 0;
    this.filled = 0;
    this.failed = 0;
  }
}
