// The files a KME test cluster starts from: a cluster CA, one certificate and key per KME
// site, one per SAE, and a free port per site, all written into a temporary folder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate, type CertificateAuthority, type IssuedCertificate } from '../../src/pki/certs.js';
import { freePort } from './net.js';

export class KmeTestPki {
  readonly dir: string;
  ca!: CertificateAuthority;
  kmeCerts: Record<string, IssuedCertificate> = {};
  saeCerts: Record<string, IssuedCertificate> = {};
  ports: Record<string, number> = {};

  constructor(dirPrefix: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), dirPrefix));
  }

  /** Writes a file into the cluster's folder (0600 unless told) and returns its path. */
  file(name: string, data: string | Buffer, mode = 0o600): string {
    const f = path.join(this.dir, name);
    fs.writeFileSync(f, data, { mode });
    return f;
  }

  /** The CA, `kme-<ID>.crt/.key` per site and `sae-<ID>.crt/.key` per SAE (saes: SAE ID -> site). */
  async setup(siteIds: string[], saes: Record<string, string>): Promise<void> {
    this.ca = await createCertificateAuthority();
    this.file('ca.crt', this.ca.certPem, 0o644);
    for (const id of siteIds) {
      this.kmeCerts[id] = await issueKmeCertificate(this.ca, { kmeId: id, hosts: ['127.0.0.1'] });
      this.file(`kme-${id}.crt`, this.kmeCerts[id]!.certPem, 0o644);
      this.file(`kme-${id}.key`, this.kmeCerts[id]!.keyPem);
      this.ports[id] = await freePort();
    }
    for (const [sae, site] of Object.entries(saes)) {
      this.saeCerts[sae] = await issueSaeCertificate(this.ca, { saeId: sae, site });
      this.file(`sae-${sae}.crt`, this.saeCerts[sae]!.certPem, 0o644);
      this.file(`sae-${sae}.key`, this.saeCerts[sae]!.keyPem);
    }
  }

  url(id: string): string {
    return `https://127.0.0.1:${this.ports[id]}`;
  }
}
