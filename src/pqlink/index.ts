// The per-link ML-KEM-768 ratchet (docs/post-quantum.md, "Inter-site ratchet"): inter-site
// keys whose secrecy rests neither on TLS nor on a long-lived secret.
export { confirmation, keySecret, linkLabel, nextChainSecret, ratchetSuite, SUITE_RATCHET } from './chain.js';
export { mlKem768, nobleMlKem, nodeMlKem, nodeMlKemAvailable, type MlKem768, type MlKemKeyPair } from './mlkem.js';
export { COMMIT_PATH, LinkRatchet, NUDGE_PATH, OFFER_PATH, RatchetError, type LinkRatchetOptions, type RatchetCall, type RatchetLog } from './ratchet.js';
export { PQLINK_MIGRATIONS, RatchetStore, type RatchetState, type Sealer } from './store.js';
