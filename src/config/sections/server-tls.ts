// The `tls` block of a role that serves HTTPS (entropy, quality): certificate and key
// files and the minimum protocol version, required unless the role serves plain HTTP.
import { validateGroups } from './tls-groups.js';
import type { ConfigNode } from '../node.js';

export interface ServerTlsConfig {
  certFile: string;
  keyFile: string;
  minVersion: 'TLSv1.2' | 'TLSv1.3';
  /** Key-exchange groups, colon-separated, in order of preference (docs/post-quantum.md). */
  groups: string;
}

/**
 * Validates `<section>.tls`; fails with a message naming `<section>.plainHttp` when the
 * role is enabled without TLS files and without plain HTTP.
 */
export function validateServerTls(
  tlsNode: ConfigNode,
  section: string,
  { enabled, plainHttp }: { enabled: boolean; plainHttp: boolean },
): ServerTlsConfig | undefined {
  tlsNode.object(['certFile', 'keyFile', 'minVersion', 'groups']);
  if (tlsNode.present) {
    return {
      certFile: tlsNode.child('certFile').requiredString(),
      keyFile: tlsNode.child('keyFile').requiredString(),
      minVersion: tlsNode.child('minVersion').oneOf(['TLSv1.3', 'TLSv1.2'] as const, 'TLSv1.3'),
      groups: validateGroups(tlsNode.child('groups')),
    };
  }
  if (enabled && !plainHttp) {
    tlsNode.fail(`certFile and keyFile are required (or set ${section}.plainHttp to true to serve plain HTTP)`);
  }
  return undefined;
}
