// The ratchet's building blocks: ML-KEM-768 against NIST's ACVP known-answer vectors (both
// implementations the ratchet may use), their interoperability, and two real LinkRatchets
// (on real SQLite) moving a link through epochs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { afterEach, describe, expect, it } from 'vitest';

import { deriveKey } from '../src/kme/derive.js';
import {
  keySecret,
  LinkRatchet,
  linkLabel,
  mlKem768,
  nextChainSecret,
  nobleMlKem,
  nodeMlKem,
  nodeMlKemAvailable,
  RatchetStore,
  type MlKem768,
} from '../src/pqlink/index.js';
import { nodePrivateKeyFromExpanded, nodePrivateKeyFromSeed, rawEncapsulationKey } from '../src/pqlink/mlkem.js';
import { SiteKey } from '../src/kme/site-key.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import * as crypto from 'node:crypto';

const here = path.dirname(fileURLToPath(import.meta.url));
interface Acvp {
  source: string;
  keyGen: Array<{ tcId: number; d: string; z: string; ek: string; dk: string }>;
  encapsulation: Array<{ tcId: number; ek: string; dk: string; m: string; c: string; k: string }>;
  decapsulation: { ek: string; dk: string; tests: Array<{ tcId: number; c: string; k: string; reason: string }> };
}
const acvp = JSON.parse(fs.readFileSync(path.join(here, 'fixtures', 'mlkem768-acvp.json'), 'utf8')) as Acvp;
const hex = (s: string): Buffer => Buffer.from(s, 'hex');

/** Node 24.7+ on OpenSSL 3.5 has ML-KEM in node:crypto; Node 22 does not (its TLS has it, its crypto API not). */
const nodeHasMlKem = typeof (crypto as unknown as { encapsulate?: unknown }).encapsulate === 'function';
const nodeDecapsulate = (crypto as unknown as { decapsulate: (k: crypto.KeyObject, c: Buffer) => Buffer }).decapsulate;

describe('ML-KEM-768 known answers (NIST ACVP, FIPS 203)', () => {
  it('the vectors are the ML-KEM-768 ones, from NIST', () => {
    expect(acvp.source).toMatch(/ACVP-Server/);
    expect(acvp.keyGen.length).toBeGreaterThan(0);
    for (const t of acvp.keyGen) expect(hex(t.ek)).toHaveLength(1184);
  });

  it('@noble/post-quantum: key generation from (d, z), encapsulation with m, decapsulation incl. implicit rejection', () => {
    for (const t of acvp.keyGen) {
      const { publicKey, secretKey } = ml_kem768.keygen(Buffer.concat([hex(t.d), hex(t.z)]));
      expect(Buffer.from(publicKey).toString('hex'), `keyGen ${t.tcId}`).toBe(t.ek.toLowerCase());
      expect(Buffer.from(secretKey).toString('hex'), `keyGen ${t.tcId}`).toBe(t.dk.toLowerCase());
    }
    for (const t of acvp.encapsulation) {
      const { cipherText, sharedSecret } = ml_kem768.encapsulate(hex(t.ek), hex(t.m));
      expect(Buffer.from(cipherText).toString('hex'), `encap ${t.tcId}`).toBe(t.c.toLowerCase());
      expect(Buffer.from(sharedSecret).toString('hex'), `encap ${t.tcId}`).toBe(t.k.toLowerCase());
    }
    for (const t of acvp.decapsulation.tests) {
      expect(Buffer.from(ml_kem768.decapsulate(hex(t.c), hex(acvp.decapsulation.dk))).toString('hex'), `decap ${t.tcId} (${t.reason})`).toBe(t.k.toLowerCase());
    }
  });

  it('node:crypto where the runtime has ML-KEM (key generation from the seed, decapsulation incl. implicit rejection); else the ratchet falls back to @noble/post-quantum', () => {
    expect(nodeMlKemAvailable()).toBe(nodeHasMlKem);
    expect(mlKem768().name).toBe(nodeHasMlKem ? 'node:crypto' : '@noble/post-quantum');
    if (!nodeHasMlKem) {
      expect(() => nodeMlKem()).toThrow(/no ML-KEM-768/);
      return;
    }
    for (const t of acvp.keyGen) {
      const priv = nodePrivateKeyFromSeed(Buffer.concat([hex(t.d), hex(t.z)]));
      expect(rawEncapsulationKey(crypto.createPublicKey(priv)).toString('hex'), `keyGen ${t.tcId}`).toBe(t.ek.toLowerCase());
    }
    for (const t of acvp.encapsulation) {
      expect(Buffer.from(nodeDecapsulate(nodePrivateKeyFromExpanded(hex(t.dk)), hex(t.c))).toString('hex'), `encap ${t.tcId}`).toBe(t.k.toLowerCase());
    }
    const dk = nodePrivateKeyFromExpanded(hex(acvp.decapsulation.dk));
    for (const t of acvp.decapsulation.tests) {
      expect(Buffer.from(nodeDecapsulate(dk, hex(t.c))).toString('hex'), `decap ${t.tcId} (${t.reason})`).toBe(t.k.toLowerCase());
    }
  });

  it('the implementations interoperate both ways: one generates and decapsulates, the other encapsulates', () => {
    const impls: MlKem768[] = [nobleMlKem(), ...(nodeHasMlKem ? [nodeMlKem()] : [])];
    expect(impls.map((i) => i.name)).toEqual(nodeHasMlKem ? ['@noble/post-quantum', 'node:crypto'] : ['@noble/post-quantum']);
    for (const a of impls) {
      for (const b of impls) {
        const pair = a.generate();
        const { ciphertext, sharedSecret } = b.encapsulate(pair.encapsulationKey);
        expect(ciphertext).toHaveLength(1088);
        expect(pair.decapsulate(ciphertext).equals(sharedSecret), `${a.name} ⇄ ${b.name}`).toBe(true);
      }
    }
  });
});

describe('the chain', () => {
  const link = linkLabel('B', 'A');
  it('names the link the same way from both ends, and every input changes the next secret', () => {
    expect(linkLabel('A', 'B')).toEqual(link);
    const s = crypto.randomBytes(32);
    const ss = crypto.randomBytes(32);
    const psk = crypto.randomBytes(32);
    const base = nextChainSecret(s, ss, psk, 2, link);
    expect(nextChainSecret(s, ss, psk, 2, link)).toEqual(base);
    for (const other of [
      nextChainSecret(undefined, ss, psk, 2, link),
      nextChainSecret(s, crypto.randomBytes(32), psk, 2, link),
      nextChainSecret(s, ss, undefined, 2, link),
      nextChainSecret(s, ss, psk, 3, link),
      nextChainSecret(s, ss, psk, 2, linkLabel('A', 'C')),
    ]) {
      expect(other).not.toEqual(base);
    }
    expect(keySecret(base, 2, link)).not.toEqual(base);
  });
});

describe('two LinkRatchets on real SQLite', () => {
  const dbs: Db[] = [];
  afterEach(async () => {
    while (dbs.length) await dbs.pop()!.close();
  });

  async function pair(opts: { epochKeys?: number; leaderKem?: MlKem768; followerKem?: MlKem768; psk?: Buffer } = {}) {
    const lines: string[] = [];
    const log = { info: () => undefined, debug: () => undefined, warn: (_o: object, m?: string) => void lines.push(m ?? ''), error: (_o: object, m?: string) => void lines.push(m ?? '') };
    const make = async (site: string, peer: string, kem: MlKem768 | undefined, other: () => LinkRatchet) => {
      const db = await openDatabase({ url: 'sqlite::memory:' });
      dbs.push(db);
      const store = new RatchetStore(db, SiteKey.fromBytes(crypto.randomBytes(32)));
      await store.migrate();
      const paths: Record<string, (r: LinkRatchet, body: unknown) => Promise<unknown>> = {
        '/internal/v1/pqlink/offer': (r, b) => r.onOffer(b),
        '/internal/v1/pqlink/commit': (r, b) => r.onCommit(b),
        '/internal/v1/pqlink/nudge': (r, b) => r.onNudge(b),
      };
      // The peer's handler, JSON-serialised both ways as over the link.
      const call = async (p: string, body: unknown) => JSON.parse(JSON.stringify(await paths[p]!(other(), JSON.parse(JSON.stringify(body))))) as unknown;
      return new LinkRatchet({ site, peer, store, call, log, epochMs: 3_600_000, epochKeys: opts.epochKeys ?? 1000, graceMs: 0, ...(kem ? { mlkem: kem } : {}), ...(opts.psk ? { psk: opts.psk, pskFingerprint: 'f' } : {}) });
    };
    let a!: LinkRatchet;
    let b!: LinkRatchet;
    a = await make('A', 'B', opts.leaderKem, () => b);
    b = await make('B', 'A', opts.followerKem, () => a);
    return { a, b, lines };
  }

  it('the follower asks, the leader re-keys; both derive the same key secret; node:crypto and noble mixed', async () => {
    const kems = nodeHasMlKem ? [[nodeMlKem(), nobleMlKem()], [nobleMlKem(), nodeMlKem()]] : [[nobleMlKem(), nobleMlKem()]];
    for (const [leaderKem, followerKem] of kems) {
      const { a, b } = await pair({ leaderKem: leaderKem!, followerKem: followerKem! });
      expect(a.leader).toBe(true);
      const sent = await b.forSending(1); // no chain yet: B nudges A, A runs offer + commit
      expect(sent.epoch).toBe(1);
      const got = await a.forReceiving(sent.suite, sent.epoch, 1);
      expect(got.secret).toEqual(sent.secret);
      const seed = crypto.randomBytes(32);
      const meta = { keyId: crypto.randomUUID(), size: 256, origin: 'B', peer: 'A' };
      expect(deriveKey(seed, got.secret, meta)).toEqual(deriveKey(seed, sent.secret, meta));
    }
  });

  it('advances after epochKeys keys, erases the old epoch, and refuses an unknown epoch with 503', async () => {
    const { a, b, lines } = await pair({ epochKeys: 3, psk: crypto.randomBytes(32) });
    const first = await a.forSending(3); // establishes epoch 1; 3 keys make it due
    expect(first.epoch).toBe(1);
    await a.maintain(); // leader: due → epoch 2; grace 0 → epoch 1 erased at the next pass
    await a.maintain();
    await b.maintain();
    const second = await a.forSending(1);
    expect(second.epoch).toBe(2);
    expect((await b.forReceiving(second.suite, 2, 1)).secret).toEqual(second.secret);
    await expect(b.forReceiving(first.suite, 1, 1)).rejects.toMatchObject({ status: 503 });
    await expect(b.forReceiving('hkdf-sha256', 2, 1)).rejects.toMatchObject({ status: 503 });
    expect(lines.some((l) => /epoch mismatch/.test(l))).toBe(true);
    expect(lines.some((l) => /suite differs/.test(l))).toBe(true);
  });
});
