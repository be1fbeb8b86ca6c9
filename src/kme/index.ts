// The key management entity (KME) of one site: ETSI GS QKD 014 over mutual TLS.
export { KmeSite, type KmeSiteDeps } from './site.js';
export { KmeService, type KmeServiceOptions, type KeyContainer, type StatusReply } from './service.js';
export { buildKmeServer } from './server.js';
export { KeyStore, KME_MIGRATIONS } from './store.js';
export { SiteKey, loadPsk } from './site-key.js';
export { deriveKey, suiteFor, pskFingerprint } from './derive.js';
export { clientSeedSource, poolSeedSource, systemSeedSource, SeedUnavailableError, type SeedSource } from './seed-source.js';
export { EtsiError } from './errors.js';
export { EtsiClient, type EtsiClientOptions, EtsiClientError } from './etsi-client.js';
