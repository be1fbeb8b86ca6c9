// Keys at rest are sealed with the site key: AES-256-GCM, a fresh 96-bit IV per key, and
// the key's ID and link as associated data, so a sealed key moved to another row (or
// another link) fails to open rather than being served under the wrong ID.
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { promises as fs } from 'node:fs';

import { refuseSharedFile } from '../config/private-file.js';
import { writePrivateFile } from '../pki/files.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** IVs are drawn from the CSPRNG in bulk: one getrandom call per 1,024 seals instead of one each. */
const IV_POOL_BYTES = IV_BYTES * 1024;

export class SiteKey {
  private ivPool = Buffer.alloc(0);
  private ivOffset = 0;

  /**
   * The key as a KeyObject, made once: given as a Buffer, Node 22+ imports the key anew
   * on every cipher and HMAC (16-17 µs each here against 2.4-3.2 µs, and a third of a
   * receiving site's CPU at full key rate; benchmarks/README.md, issue 29 item 8).
   */
  private readonly key: KeyObject;

  private constructor(raw: Buffer) {
    this.key = createSecretKey(raw);
    raw.fill(0);
  }

  /** A fresh random 96-bit IV (never handed out twice: the pool only moves forward). */
  private nextIv(): Buffer {
    if (this.ivOffset + IV_BYTES > this.ivPool.length) {
      this.ivPool = randomBytes(IV_POOL_BYTES);
      this.ivOffset = 0;
    }
    const iv = this.ivPool.subarray(this.ivOffset, this.ivOffset + IV_BYTES);
    this.ivOffset += IV_BYTES;
    return iv;
  }

  static fromBytes(key: Buffer): SiteKey {
    if (key.length !== KEY_BYTES) throw new RangeError(`a site key is ${KEY_BYTES} bytes`);
    return new SiteKey(Buffer.from(key));
  }

  /**
   * Reads the site key file (32 raw bytes, or 64 hex characters), creating it 0600 with
   * fresh random bytes when absent. A file readable by group or others is refused: the
   * site key protects every stored key.
   */
  static async load(file: string): Promise<SiteKey> {
    let data: Buffer;
    try {
      const st = await fs.stat(file);
      refuseSharedFile('site key file', file, st.mode);
      data = await fs.readFile(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const fresh = randomBytes(KEY_BYTES);
      try {
        await writePrivateFile(file, fresh);
      } catch (writeErr) {
        // Another instance of this site created it first: use theirs.
        if (!String((writeErr as Error).message).includes('exists')) throw writeErr;
      }
      data = await fs.readFile(file);
    }
    const text = data.toString('utf8').trim();
    if (data.length !== KEY_BYTES && /^[0-9a-fA-F]{64}$/.test(text)) data = Buffer.from(text, 'hex');
    if (data.length !== KEY_BYTES) throw new Error(`site key file ${file} must hold 32 bytes (or 64 hex digits)`);
    return new SiteKey(data);
  }

  seal(plain: Buffer, aad: Buffer): Buffer {
    const iv = this.nextIv();
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(aad);
    const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ct]);
  }

  open(sealed: Buffer, aad: Buffer): Buffer {
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('sealed key is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const body = decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES));
    try {
      // GCM's final() only checks the tag (it holds no plaintext): the key is `body`, and it
      // is the caller's (who zeroes it), but not before the tag proved it authentic.
      const tail = decipher.final();
      if (tail.length === 0) return body;
      const whole = Buffer.concat([body, tail]);
      body.fill(0);
      return whole;
    } catch (err) {
      body.fill(0);
      throw err;
    }
  }

  /** A keyed digest (for comparing deliveries without storing seeds). */
  mac(data: Buffer | string): string {
    return createHmac('sha256', this.key).update(data).digest('hex');
  }
}

/** Reads a link PSK file: at least 32 bytes of secret, 0600, raw or hex. */
export async function loadPsk(file: string): Promise<Buffer> {
  const st = await fs.stat(file).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot read PSK file ${file} (${err.code ?? err.message})`);
  });
  refuseSharedFile('PSK file', file, st.mode);
  let data = await fs.readFile(file);
  const text = data.toString('utf8').trim();
  if (/^([0-9a-fA-F]{2}){32,}$/.test(text)) data = Buffer.from(text, 'hex');
  if (data.length < 32) throw new Error(`PSK file ${file} must hold at least 32 bytes (256 bits)`);
  return data;
}
