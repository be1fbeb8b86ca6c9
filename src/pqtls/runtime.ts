// What the running Node's OpenSSL can do for post-quantum TLS. Every supported line
// (Node 22.20+, 24, 26) bundles OpenSSL 3.5, which knows the hybrid group X25519MLKEM768
// (X25519 and ML-KEM-768 together: a session stays secret while either holds), so the
// default offers it first everywhere. Whether it is really there is asked of OpenSSL, not
// read from version numbers: a Node linked against an older system OpenSSL gets a clear
// error naming the group (groupsProblem, requirePostQuantum) instead of a failed handshake.
import { createSecureContext } from 'node:tls';

/** The hybrid groups OpenSSL 3.5 names (ECDHE and ML-KEM in one key share). */
export const HYBRID_GROUPS = ['X25519MLKEM768', 'SecP256r1MLKEM768', 'SecP384r1MLKEM1024'] as const;

export const HYBRID_DEFAULT_GROUPS = 'X25519MLKEM768:X25519:P-256';

/** Shown when a setting needs ML-KEM and this runtime has none. */
export const NODE_VERSIONS_WITH_MLKEM = 'Node.js 22.20 or later, 24 or 26 (OpenSSL 3.5)';

const known = new Map<string, boolean>();

/** True when this runtime's OpenSSL accepts `group` as a TLS key-exchange group. */
export function groupSupported(group: string): boolean {
  let ok = known.get(group);
  if (ok === undefined) {
    try {
      createSecureContext({ ecdhCurve: group });
      ok = true;
    } catch {
      ok = false;
      // A refused group leaves its error on OpenSSL's error queue, where the next
      // unrelated OpenSSL call picks it up: WebCrypto's importKey then failed with "Invalid
      // keyData" (`qentropy pki issue`). A context that succeeds clears the queue.
      createSecureContext();
    }
    known.set(group, ok);
  }
  return ok;
}

export function hybridAvailable(): boolean {
  return groupSupported('X25519MLKEM768');
}

export function isHybridGroup(group: string | undefined): boolean {
  return group !== undefined && (HYBRID_GROUPS as readonly string[]).includes(group);
}

/** The default `tls.groups` of every face: hybrid first, classical for peers without ML-KEM. */
export function defaultGroups(): string {
  return HYBRID_DEFAULT_GROUPS;
}

export interface PqRuntime {
  node: string;
  openssl: string;
  hybridGroups: boolean;
  defaultGroups: string;
}

export function pqRuntime(): PqRuntime {
  return { node: process.version, openssl: process.versions.openssl ?? 'unknown', hybridGroups: hybridAvailable(), defaultGroups: defaultGroups() };
}

/**
 * Refuses a setting that needs hybrid key exchange on a runtime without ML-KEM. Thrown at
 * start, so a daemon never runs believing it is protected when it is not.
 */
export function requireHybridRuntime(setting: string): void {
  if (hybridAvailable()) return;
  throw new Error(
    `${setting}: needs post-quantum (ML-KEM) TLS, which this runtime lacks (Node ${process.version}, OpenSSL ${process.versions.openssl}); ` +
      `run qentropy on ${NODE_VERSIONS_WITH_MLKEM}, or turn the setting off`,
  );
}
