// Certificates for tests that run real TLS: a CA, server certificates for 127.0.0.1 and
// localhost, client certificates with a CN and URI SANs (mTLS), and expired or
// not-yet-valid variants. Made in memory with @peculiar/x509 on Node's WebCrypto, all PEM.
//
//   const ca = await createTestCa();
//   const server = await ca.issueServer();                 // 127.0.0.1, ::1, localhost
//   const client = await ca.issueClient({ commonName: 'sae-1', uris: ['urn:qentropy:sae:sae-1'] });
//   const old = await ca.issueServer({ expired: true });
//   https.createServer({ cert: server.certPem, key: server.keyPem, ca: ca.certPem }, ...)
import { randomBytes, webcrypto } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;
const KEYGEN = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const DAY = 86_400_000;

export interface TestCertificate {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  commonName?: string;
  /** DNS names (server default: localhost). */
  dnsNames?: string[];
  /** IP addresses (server default: 127.0.0.1 and ::1). */
  ips?: string[];
  /** URI SANs (e.g. an SAE or KME identity). */
  uris?: string[];
  /** Validity ended yesterday. */
  expired?: boolean;
  /** Validity starts tomorrow. */
  notYetValid?: boolean;
  validityDays?: number;
}

export interface TestCa extends TestCertificate {
  issueServer(options?: IssueOptions): Promise<TestCertificate>;
  issueClient(options?: IssueOptions): Promise<TestCertificate>;
  /** An intermediate CA signed by this one (for chain tests). */
  issueIntermediate(options?: { commonName?: string }): Promise<TestCa>;
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(KEYGEN, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  return `${x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY')}\n`;
}

function serial(): string {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x01;
  return b.toString('hex');
}

function validity(options: IssueOptions): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  if (options.expired) return { notBefore: new Date(now - 30 * DAY), notAfter: new Date(now - DAY) };
  if (options.notYetValid) return { notBefore: new Date(now + DAY), notAfter: new Date(now + 30 * DAY) };
  return { notBefore: new Date(now - 60_000), notAfter: new Date(now + (options.validityDays ?? 7) * DAY) };
}

function makeCa(cert: x509.X509Certificate, keys: webcrypto.CryptoKeyPair, certPem: string, keyPemText: string, chainPem: string): TestCa {
  async function issue(kind: 'server' | 'client', options: IssueOptions = {}): Promise<TestCertificate> {
    const leafKeys = await keyPair();
    const names: x509.JsonGeneralName[] = [];
    const dns = options.dnsNames ?? (kind === 'server' ? ['localhost'] : []);
    const ips = options.ips ?? (kind === 'server' ? ['127.0.0.1', '::1'] : []);
    for (const value of dns) names.push({ type: 'dns', value });
    for (const value of ips) names.push({ type: 'ip', value });
    for (const value of options.uris ?? []) names.push({ type: 'url', value });
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension(
        [kind === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
        false,
      ),
      await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(cert),
    ];
    if (names.length) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${options.commonName ?? (kind === 'server' ? 'localhost' : 'test-client')}`,
      issuer: cert.subject,
      ...validity(options),
      signingAlgorithm: SIGN,
      publicKey: leafKeys.publicKey,
      signingKey: keys.privateKey,
      extensions,
    });
    // Leaf first, then any intermediates, so servers present the whole chain.
    return { certPem: `${leaf.toString('pem')}\n${chainPem}`, keyPem: await keyPem(leafKeys.privateKey) };
  }
  return {
    certPem,
    keyPem: keyPemText,
    issueServer: (options) => issue('server', options),
    issueClient: (options) => issue('client', options),
    async issueIntermediate(options = {}) {
      const subKeys = await keyPair();
      const sub = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: `CN=${options.commonName ?? 'qentropy test intermediate'}`,
        issuer: cert.subject,
        ...validity({}),
        signingAlgorithm: SIGN,
        publicKey: subKeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
          await x509.SubjectKeyIdentifierExtension.create(subKeys.publicKey),
          await x509.AuthorityKeyIdentifierExtension.create(cert),
        ],
      });
      const subPem = `${sub.toString('pem')}\n`;
      return makeCa(sub, subKeys, subPem, await keyPem(subKeys.privateKey), `${subPem}${chainPem}`);
    },
  };
}

/** A fresh self-signed root CA (P-256, valid a week unless told otherwise). */
export async function createTestCa(options: { commonName?: string; expired?: boolean } = {}): Promise<TestCa> {
  const keys = await keyPair();
  const name = `CN=${options.commonName ?? 'qentropy test CA'}`;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    ...validity({ expired: options.expired ?? false }),
    signingAlgorithm: SIGN,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = `${cert.toString('pem')}\n`;
  return makeCa(cert, keys, certPem, await keyPem(keys.privateKey), '');
}

/** Writes PEM texts into a fresh 0700 temp directory (files 0600); returns their paths. */
export function writePemFiles(files: Record<string, string>): { dir: string; paths: Record<string, string> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-tls-'));
  const paths: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text, { mode: 0o600 });
    paths[name] = file;
  }
  return { dir, paths };
}
