// The `tls.groups` setting of a face: a colon-separated list of key-exchange groups in
// order of preference (OpenSSL's syntax, e.g. "X25519MLKEM768:X25519:P-256"). Checked
// group by group against this runtime, so a typo (or a hybrid group on a Node linked
// against an older system OpenSSL) is named in the error instead of failing at the first
// handshake. Config sections read the setting through config/sections/tls-groups.ts.
import { groupSupported, HYBRID_GROUPS, isHybridGroup, NODE_VERSIONS_WITH_MLKEM } from './runtime.js';

/** Why `groups` cannot be used here, or undefined when every group is known to OpenSSL. */
export function groupsProblem(groups: string): string | undefined {
  const names = groups.split(':');
  if (groups.length === 0 || names.some((n) => n.trim() === '' || n !== n.trim())) return 'must be a colon-separated list of group names, e.g. "X25519MLKEM768:X25519:P-256"';
  const unknown = names.filter((n) => !groupSupported(n));
  if (unknown.length === 0) return undefined;
  const hybrid = unknown.filter((n) => isHybridGroup(n));
  if (hybrid.length > 0) {
    return `${hybrid.join(', ')} needs ML-KEM, which this runtime's OpenSSL ${process.versions.openssl} lacks (${NODE_VERSIONS_WITH_MLKEM} has it)`;
  }
  return `unknown group${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
}

/** The hybrid groups of a list, in its order (the only ones a requirePostQuantum face offers). */
export function hybridOnly(groups: string): string {
  const hybrid = groups.split(':').filter((g) => isHybridGroup(g));
  return hybrid.length > 0 ? hybrid.join(':') : HYBRID_GROUPS[0];
}
