// The only place that makes certificates: the cluster CA, KME (site) certificates and SAE
// (client) certificates. Keys come from node:crypto's WebCrypto; certificates are built with
// @peculiar/x509. Everything is returned as PEM so callers can write files or use it in memory.
import { randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

import * as x509 from '@peculiar/x509';

import { assertValidId, KME_URI_PREFIX, SAE_URI_PREFIX, SITE_URI_PREFIX } from './identity.js';

type WebCryptoKey = webcrypto.CryptoKey;
type WebCryptoKeyPair = webcrypto.CryptoKeyPair;
type SignAlgorithm = webcrypto.Algorithm | webcrypto.EcdsaParams;

// @peculiar/x509 types its crypto against the DOM's Crypto; Node's webcrypto is that API.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export type KeyAlgorithm = 'ecdsa-p256' | 'ed25519';

export const KEY_ALGORITHMS: readonly KeyAlgorithm[] = ['ecdsa-p256', 'ed25519'];

export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
}

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

export interface Validity {
  /** Default: one minute ago (clock skew between sites). */
  notBefore?: Date;
  /** Default: notBefore + validityDays. */
  notAfter?: Date;
  validityDays?: number;
}

const DAY_MS = 86_400_000;

function algorithmParams(alg: KeyAlgorithm): { gen: webcrypto.EcKeyGenParams | webcrypto.Algorithm; sign: SignAlgorithm } {
  if (alg === 'ed25519') return { gen: { name: 'Ed25519' }, sign: { name: 'Ed25519' } };
  return { gen: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams };
}

async function generateKeys(alg: KeyAlgorithm): Promise<WebCryptoKeyPair> {
  const { gen } = algorithmParams(alg);
  return (await webcrypto.subtle.generateKey(gen as webcrypto.EcKeyGenParams, true, ['sign', 'verify'])) as WebCryptoKeyPair;
}

async function privateKeyPem(key: WebCryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

function validityWindow(v: Validity, defaultDays: number): { notBefore: Date; notAfter: Date } {
  const notBefore = v.notBefore ?? new Date(Date.now() - 60_000);
  const days = v.validityDays ?? defaultDays;
  if (!(days > 0)) throw new RangeError('validity must be a positive number of days');
  const notAfter = v.notAfter ?? new Date(notBefore.getTime() + days * DAY_MS);
  if (notAfter.getTime() <= notBefore.getTime()) throw new RangeError('notAfter must be after notBefore');
  return { notBefore, notAfter };
}

/** A positive 128-bit serial (RFC 5280 allows up to 20 octets; the top bit clear keeps it positive). */
function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x01;
  return b.toString('hex');
}

/** X.500 names: escape the characters RFC 4514 reserves. IDs are already restricted. */
function dn(parts: Record<string, string>): string {
  return Object.entries(parts)
    .map(([k, v]) => `${k}=${v.replace(/([,+"\\<>;=])/g, '\\$1')}`)
    .join(', ');
}

export interface CaOptions extends Validity {
  algorithm?: KeyAlgorithm;
  /** Subject CN of the CA. */
  name?: string;
}

export async function createCertificateAuthority(opts: CaOptions = {}): Promise<CertificateAuthority> {
  const alg = opts.algorithm ?? 'ecdsa-p256';
  const keys = await generateKeys(alg);
  const { notBefore, notAfter } = validityWindow(opts, 3650);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: dn({ CN: opts.name ?? 'qentropy cluster CA', O: 'qentropy' }),
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: algorithmParams(alg).sign,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey) };
}

interface LoadedCa {
  cert: x509.X509Certificate;
  key: WebCryptoKey;
  sign: SignAlgorithm;
}

async function loadCa(ca: CertificateAuthority): Promise<LoadedCa> {
  const cert = new x509.X509Certificate(ca.certPem);
  const der = x509.PemConverter.decodeFirst(ca.keyPem);
  const algName = cert.publicKey.algorithm.name;
  const alg: KeyAlgorithm = algName === 'Ed25519' ? 'ed25519' : 'ecdsa-p256';
  if (algName !== 'Ed25519' && algName !== 'ECDSA') throw new Error(`unsupported CA key algorithm ${algName}`);
  const { gen, sign } = algorithmParams(alg);
  const key = (await webcrypto.subtle.importKey('pkcs8', der, gen as webcrypto.EcKeyImportParams, false, ['sign']));
  return { cert, key, sign };
}

export interface IssueOptions extends Validity {
  algorithm?: KeyAlgorithm;
}

export interface KmeCertOptions extends IssueOptions {
  kmeId: string;
  /** Host names and IP addresses the KME is reached at (subjectAltName DNS/IP). */
  hosts?: string[];
}

export interface SaeCertOptions extends IssueOptions {
  saeId: string;
  /** The site (KME ID) the SAE belongs to. */
  site: string;
}

async function issue(
  ca: CertificateAuthority,
  opts: IssueOptions,
  cn: string,
  names: x509.JsonGeneralName[],
  usages: string[],
): Promise<IssuedCertificate> {
  const loaded = await loadCa(ca);
  const keys = await generateKeys(opts.algorithm ?? 'ecdsa-p256');
  const { notBefore, notAfter } = validityWindow(opts, 825);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: dn({ CN: cn, O: 'qentropy' }),
    issuer: loaded.cert.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: loaded.key,
    signingAlgorithm: loaded.sign,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension(usages, false),
      new x509.SubjectAlternativeNameExtension(names, false),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(loaded.cert),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey) };
}

/** A KME certificate: server and client authentication (it also calls its peers). */
export async function issueKmeCertificate(ca: CertificateAuthority, opts: KmeCertOptions): Promise<IssuedCertificate> {
  assertValidId(opts.kmeId, 'KME ID');
  const names: x509.JsonGeneralName[] = [{ type: 'url', value: `${KME_URI_PREFIX}${opts.kmeId}` }];
  for (const host of opts.hosts ?? []) {
    names.push(isIP(host) ? { type: 'ip', value: host } : { type: 'dns', value: host });
  }
  return issue(ca, opts, opts.kmeId, names, [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]);
}

/** An SAE (client) certificate: client authentication only, so it cannot serve as a KME. */
export async function issueSaeCertificate(ca: CertificateAuthority, opts: SaeCertOptions): Promise<IssuedCertificate> {
  assertValidId(opts.saeId, 'SAE ID');
  assertValidId(opts.site, 'site KME ID');
  const names: x509.JsonGeneralName[] = [
    { type: 'url', value: `${SAE_URI_PREFIX}${opts.saeId}` },
    { type: 'url', value: `${SITE_URI_PREFIX}${opts.site}` },
  ];
  return issue(ca, opts, opts.saeId, names, [x509.ExtendedKeyUsage.clientAuth]);
}
