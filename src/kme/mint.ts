// New keys at the origin, from fresh seeds: the key each one is (for the enc_keys answer),
// the metadata every site it goes to needs to regenerate it, and the origin's row (metadata
// only: the origin never serves a key again). The slave's site derives the key from its own
// seed; a further site of a multicast key gets its own seed and the key wrapped with its
// link's derivation (derive.ts), each link with its own secret and ratchet epoch. Nothing here touches the network or the database.
import { randomUUID } from 'node:crypto';

import { deriveKey, SEED_BYTES, SUITE_WRAPPED_SUFFIX, wrapForSite } from './derive.js';
import type { WireKey } from './link.js';
import { wipeSecrets, type LinkKeyContext } from './link-keys.js';
import { PENDING, type KeyRow } from './store.js';

export interface KeyItem {
  key_ID: string;
  key: string;
}

export interface MintRequest {
  origin: string;
  /** The master SAE. */
  owner: string;
  number: number;
  /** Bits. */
  size: number;
  created: number;
  expires: number;
  /** Slave SAEs by site: the slave's site first (its list may be empty = any SAE there), then further sites. */
  slaves: ReadonlyMap<string, readonly string[]>;
  /** Each site's link context for sending now: suite, ratchet epoch, secret (link-keys.ts); the secrets are zeroed here once used. */
  links: ReadonlyMap<string, LinkKeyContext>;
  /** `seedBytes(number, sites)` fresh random bytes; zeroed here once used. */
  seeds: Buffer;
  /** The keyed fingerprint of a delivery, stored with the row. */
  digest: (w: WireKey) => string;
}

export interface Minted {
  keys: KeyItem[];
  rows: KeyRow[];
  /** The deliveries, by site, in the order of `slaves`. */
  wire: Map<string, WireKey[]>;
}

export function seedBytes(number: number, sites: number): number {
  return SEED_BYTES * number * sites;
}

export function mintKeys(req: MintRequest): Minted {
  const sites = [...req.slaves.keys()];
  const [slaveSite, ...further] = sites;
  const keys: KeyItem[] = [];
  const rows: KeyRow[] = [];
  const wire = new Map<string, WireKey[]>(sites.map((site) => [site, []]));
  let next = 0;
  const takeSeed = (): Buffer => req.seeds.subarray(next * SEED_BYTES, ++next * SEED_BYTES);
  for (let i = 0; i < req.number; i++) {
    const keyId = randomUUID();
    const metaFor = (site: string, seed: Buffer): WireKey => ({
      key_ID: keyId,
      size: req.size,
      seed: seed.toString('base64'),
      origin: req.origin,
      peer: site,
      created: req.created,
      suite: req.links.get(site)!.suite,
      ...(req.links.get(site)!.epoch !== undefined ? { epoch: req.links.get(site)!.epoch! } : {}),
      master_SAE_ID: req.owner,
      slave_SAE_IDs: [...req.slaves.get(site)!],
    });
    const seed = takeSeed();
    const key = deriveKey(seed, req.links.get(slaveSite!)!.secret, { keyId, size: req.size, origin: req.origin, peer: slaveSite! });
    const w = metaFor(slaveSite!, seed);
    wire.get(slaveSite!)!.push(w);
    for (const site of further) {
      const siteSeed = takeSeed();
      const pad = deriveKey(siteSeed, req.links.get(site)!.secret, { keyId, size: req.size, origin: req.origin, peer: site });
      const wrapped = wrapForSite(key, pad);
      const meta = metaFor(site, siteSeed);
      wire.get(site)!.push({ ...meta, suite: meta.suite + SUITE_WRAPPED_SUFFIX, wrap: wrapped.toString('base64') });
      pad.fill(0);
      wrapped.fill(0);
    }
    rows.push({
      key_id: keyId,
      origin: req.origin,
      peer: slaveSite!,
      size: req.size,
      owner: req.owner,
      // At the origin: the further sites of a multicast key (they hear of a cancel too).
      waiting: further.join(','),
      state: PENDING,
      created: req.created,
      expires: req.expires,
      digest: req.digest(w),
      key_enc: Buffer.alloc(0),
    });
    keys.push({ key_ID: keyId, key: key.toString('base64') });
    key.fill(0);
  }
  req.seeds.fill(0);
  wipeSecrets(req.links.values());
  return { keys, rows, wire };
}
