// Who a certificate speaks for. Every certificate of the cluster carries its role in a URI
// subject alternative name, so a server can tell a KME (which may use the inter-KME path)
// from an SAE (which may only use the ETSI API) without any table lookup:
//   urn:qentropy:kme:<KME_ID>                          a site's key management entity
//   urn:qentropy:sae:<SAE_ID> + urn:qentropy:site:<KME_ID>   a client (SAE) of that site
import type { X509Certificate as NodeX509Certificate } from 'node:crypto';

export type Role = 'kme' | 'sae';

export const KME_URI_PREFIX = 'urn:qentropy:kme:';
export const SAE_URI_PREFIX = 'urn:qentropy:sae:';
export const SITE_URI_PREFIX = 'urn:qentropy:site:';

/** IDs are short ASCII words, so they are safe in URIs, file names, log lines and HKDF info. */
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isValidId(id: string): boolean {
  return ID_PATTERN.test(id);
}

export function assertValidId(id: string, what: string): void {
  if (!isValidId(id)) {
    throw new RangeError(`${what} '${id}' is not valid: use 1-64 characters A-Z a-z 0-9 . _ - (starting with a letter or digit)`);
  }
}

export interface CertIdentity {
  /** 'kme' only when the certificate carries the KME URI; anything else from the CA is an SAE. */
  role: Role;
  /** The KME ID or the SAE ID. */
  id: string;
  /** For an SAE: the site (KME ID) it belongs to, when its certificate says so. */
  site?: string;
  commonName?: string;
}

/** The URI entries of a subjectAltName string as Node prints it ("URI:a, DNS:b, ..."). */
export function uriSans(subjectAltName: string | undefined): string[] {
  if (!subjectAltName) return [];
  const out: string[] = [];
  for (const part of subjectAltName.split(/,\s*/)) {
    if (part.startsWith('URI:')) out.push(part.slice(4));
  }
  return out;
}

function commonNameOf(subject: string | undefined): string | undefined {
  if (!subject) return undefined;
  for (const line of subject.split('\n')) {
    if (line.startsWith('CN=')) return line.slice(3);
  }
  return undefined;
}

/**
 * The identity a (verified) certificate carries. Returns null when it names no usable ID.
 * Certificates with conflicting role URIs (both KME and SAE) are refused outright.
 */
export function identityFromNames(subjectAltName: string | undefined, commonName: string | undefined): CertIdentity | null {
  const uris = uriSans(subjectAltName);
  const kmes = uris.filter((u) => u.startsWith(KME_URI_PREFIX)).map((u) => u.slice(KME_URI_PREFIX.length));
  const saes = uris.filter((u) => u.startsWith(SAE_URI_PREFIX)).map((u) => u.slice(SAE_URI_PREFIX.length));
  const sites = uris.filter((u) => u.startsWith(SITE_URI_PREFIX)).map((u) => u.slice(SITE_URI_PREFIX.length));
  const cn = commonName && commonName.length > 0 ? commonName : undefined;
  if (kmes.length > 0) {
    if (kmes.length !== 1 || saes.length > 0 || !isValidId(kmes[0]!)) return null;
    return { role: 'kme', id: kmes[0]!, ...(cn ? { commonName: cn } : {}) };
  }
  if (saes.length > 1 || sites.length > 1) return null;
  const id = saes[0] ?? cn;
  if (id === undefined || !isValidId(id)) return null;
  const site = sites[0];
  if (site !== undefined && !isValidId(site)) return null;
  return { role: 'sae', id, ...(site ? { site } : {}), ...(cn ? { commonName: cn } : {}) };
}

export function identityFromCertificate(cert: NodeX509Certificate): CertIdentity | null {
  return identityFromNames(cert.subjectAltName, commonNameOf(cert.subject));
}
