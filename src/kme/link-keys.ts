// How a link turns a seed into a key: the suite (and ratchet epoch) its deliveries carry and
// the secret mixed into HKDF beside the seed (docs/kme.md, "Metadata, not keys"). A link
// without the ratchet uses its PSK (or nothing); a ratcheted link (src/pqlink) uses the
// key secret of the current epoch. Both sites must agree, or the delivery is refused.
import { suiteFor } from './derive.js';
import { badRequest, EtsiError, unavailable } from './errors.js';

export interface LinkKeyContext {
  suite: string;
  /** The ratchet epoch the keys belong to (ratcheted links only). */
  epoch?: number;
  /**
   * Mixed into the key derivation beside the seed (the PSK, or the epoch's key secret). The
   * request's own copy: whoever asked for the context zeroes it once its keys are derived
   * (wipeSecrets), so no request leaves a copy of K(e) or the PSK behind in memory.
   */
  secret: Buffer | undefined;
}

/** Zeroes the requests' copies of link secrets (LinkKeyContext.secret) once they are used. */
export function wipeSecrets(contexts: Iterable<LinkKeyContext>): void {
  for (const c of contexts) c.secret?.fill(0);
}

export interface LinkKeys {
  /** The context for `keys` new keys this site sends now. */
  forSending(keys: number): Promise<LinkKeyContext>;
  /** The context for `keys` delivered keys that name `suite` and `epoch`; refuses a mismatch. */
  forReceiving(suite: unknown, epoch: unknown, keys: number): Promise<LinkKeyContext>;
  /** Reads the link's state again (another instance of the site may have moved it on). */
  resync?(): Promise<void>;
  /** What the KME status extension and /healthz show about the link. */
  status?(): Record<string, unknown>;
}

/** A link without the ratchet: HKDF over seed ‖ PSK (or the seed alone). */
export class StaticLinkKeys implements LinkKeys {
  private readonly suite: string;

  constructor(private readonly psk: Buffer | undefined) {
    this.suite = suiteFor(psk);
  }

  /** Each request gets its own copy of the PSK, which it zeroes when done (never the link's own). */
  private context(): LinkKeyContext {
    return { suite: this.suite, secret: this.psk ? Buffer.from(this.psk) : undefined };
  }

  async forSending(): Promise<LinkKeyContext> {
    return this.context();
  }

  async forReceiving(suite: unknown): Promise<LinkKeyContext> {
    if (suite !== this.suite) {
      throw badRequest(`invalid key metadata: suite '${String(suite)}' differs from this site's '${this.suite}' for the link (is the PSK the same at both sites?)`);
    }
    return this.context();
  }

  status(): Record<string, unknown> {
    return { suite: this.suite };
  }
}

/** A LinkKeys failure as the ETSI error the caller gets: refusals keep theirs, anything else is 503. */
export function asEtsiError(err: unknown): EtsiError {
  return err instanceof EtsiError ? err : unavailable((err as Error).message);
}
