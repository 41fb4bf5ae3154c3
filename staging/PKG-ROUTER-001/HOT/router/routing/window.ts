/**
 * Counts over the last minute in 60 one-second buckets: add and total are O(1) amortised (a bucket is cleared once
 * per second it is passed), whatever the rate. Requests (RPM) and tokens (TPM) each keep one.
 */
export class MinuteWindow {
  private readonly buckets = new Float64Array(60);
  private total = 0;
  /** The second (epoch) the newest bucket counts. */
  private second = 0;

  add(nowMs: number, amount: number): void {
    this.advance(nowMs);
    const slot = this.second % 60;
    this.buckets[slot] = (this.buckets[slot] ?? 0) + amount;
    this.total += amount;
  }

  sum(nowMs: number): number {
    this.advance(nowMs);
    return this.total;
  }

  private advance(nowMs: number): void {
    const now = Math.floor(nowMs / 1000);
    if (now <= this.second) return;
    // A clock stepped far ahead clears everything in one pass, not once per skipped second.
    const steps = Math.min(now - this.second, 60);
    for (let i = 1; i <= steps; i += 1) {
      const slot = (this.second + i) % 60;
      this.total -= this.buckets[slot] ?? 0;
      this.buckets[slot] = 0;
    }
    if (steps === 60) this.total = 0;
    this.second = now;
  }
}
