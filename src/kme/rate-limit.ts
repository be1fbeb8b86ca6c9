// A token bucket per SAE (kme.saeRateLimit): `keys` tokens, refilled evenly over `seconds`.
// enc_keys takes one token per key it makes, so an SAE can burst up to `keys` and then
// sustains keys/seconds. Buckets are in memory: a restart refills them, which costs at
// most one burst per SAE. Full buckets are dropped, so idle SAEs cost nothing.
export class KeyRateLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    readonly keys: number,
    readonly seconds: number,
  ) {
    this.perMs = keys / (seconds * 1000);
  }

  /** Takes `n` tokens for `who`; when there are too few, takes none and returns the seconds until there will be. */
  take(who: string, n: number, now = Date.now()): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const bucket = this.buckets.get(who);
    const tokens = bucket ? Math.min(this.keys, bucket.tokens + (now - bucket.at) * this.perMs) : this.keys;
    if (tokens < n) {
      this.buckets.set(who, { tokens, at: now });
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((n - tokens) / this.perMs / 1000)) };
    }
    this.buckets.set(who, { tokens: tokens - n, at: now });
    if (this.buckets.size > 10_000) this.dropFull(now);
    return { ok: true };
  }

  private dropFull(now: number): void {
    for (const [who, b] of this.buckets) if (b.tokens + (now - b.at) * this.perMs >= this.keys) this.buckets.delete(who);
  }
}
