// Durable commits without blocking the event loop. With synchronous=FULL, SQLite fsyncs the
// WAL inside COMMIT, and better-sqlite3 runs COMMIT on the main thread: every durable
// commit stalls the whole process for a disk flush (milliseconds), and nothing else (HTTP,
// other commits) proceeds meanwhile. Instead the connection runs synchronous=NORMAL, whose
// COMMIT only write()s the WAL frames, and durable commits then wait for an fdatasync of
// the WAL file issued from libuv's thread pool. That is the same flush FULL would do at
// that point (WAL frames are appended in commit order, so one flush covers every commit
// written before it), but the event loop keeps running while it happens, and commits made
// while one flush is in flight share the next one (group commit).
//
// Checkpoints are unchanged: with NORMAL, SQLite still syncs the WAL before copying it into
// the database and syncs the database afterwards, and syncs the WAL header when it restarts
// the log.
import fs from 'node:fs';

/**
 * A commit went through but could not be made durable (the WAL flush failed). Not retried:
 * the writes are in the database already, and the disk can no longer be trusted to keep
 * them, so every later durable commit of this connection fails too (as PostgreSQL stops on
 * a failed fsync rather than retry one the kernel may have given up on).
 */
export class NotDurableError extends Error {}

export class WalSyncer {
  private fd: number | undefined;
  private ino: number | undefined;
  /** Flushes issued and not finished yet. */
  private readonly inFlight = new Set<Promise<void>>();
  /** A flush waiting for a free slot, shared by every caller that comes meanwhile. */
  private next: Promise<void> | undefined;
  /** A failed flush may have lost data the kernel will not report again: refuse from then on. */
  private failed: NotDurableError | undefined;

  /**
   * @param maxInFlight flushes issued at once (default 1: callers arriving while one runs
   * share the next). More lets a commit start its own flush while an earlier one still
   * runs; on ext4 over a virtual disk that measured no better, so one it is.
   */
  constructor(
    private readonly walPath: string,
    private readonly maxInFlight = 1,
  ) {}

  /**
   * Resolves once everything written to the WAL before this call is on disk: after a flush
   * issued after the call (one already running may have started before the caller's write).
   */
  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.next) return this.next;
    if (this.inFlight.size < this.maxInFlight) return this.start();
    const next = Promise.race(this.inFlight)
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.failed ? Promise.reject(this.failed) : this.start();
      });
    this.next = next;
    return next;
  }

  private start(): Promise<void> {
    const flush: Promise<void> = this.flush().finally(() => this.inFlight.delete(flush));
    this.inFlight.add(flush);
    return flush;
  }

  private async flush(): Promise<void> {
    try {
      const fd = this.currentFd();
      await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
    } catch (err) {
      this.failed = new NotDurableError(`cannot flush the SQLite WAL ${this.walPath} to disk: ${(err as Error).message}`);
      throw this.failed;
    }
  }

  /** The WAL's descriptor; reopened if the file was ever replaced (it is not while the connection lives). */
  private currentFd(): number {
    const ino = fs.statSync(this.walPath).ino;
    if (this.fd !== undefined && ino === this.ino) return this.fd;
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = fs.openSync(this.walPath, fs.constants.O_RDONLY);
    this.ino = fs.fstatSync(this.fd).ino;
    return this.fd;
  }

  /** Throws when an earlier flush failed: nothing more may be committed on this connection. */
  assertHealthy(): void {
    if (this.failed) throw this.failed;
  }

  /** Waits for a flush in flight, then releases the descriptor. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight, this.next]);
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
