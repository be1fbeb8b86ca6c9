// Coalesced scrubs of one SQLite file (Db.scrub, docs/storage.md "Erasure"). A scrub is a
// full checkpoint that truncates the WAL: it costs a database flush, so many erasures made
// close together share one. A caller is answered by a scrub that started after its call
// (one already running may have started before the caller's deletion was committed), and
// at most one runs at a time: callers that arrive while one runs share the next.
export class WalScrubber {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(private readonly scrub: () => Promise<void>) {}

  request(): Promise<void> {
    if (this.next) return this.next;
    if (!this.running) return this.start();
    const next = this.running
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.start();
      });
    this.next = next;
    return next;
  }

  private start(): Promise<void> {
    const run: Promise<void> = this.scrub().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }
}
