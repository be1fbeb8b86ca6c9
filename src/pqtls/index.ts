// Post-quantum TLS on every face (docs/post-quantum.md): the `tls.groups` setting, its
// runtime-dependent default, the negotiated group per connection (log, metric, link
// status) and the requirePostQuantum refusal.
export {
  HYBRID_DEFAULT_GROUPS,
  HYBRID_GROUPS,
  NODE_VERSIONS_WITH_MLKEM,
  defaultGroups,
  groupSupported,
  hybridAvailable,
  isHybridGroup,
  pqRuntime,
  requireHybridRuntime,
  type PqRuntime,
} from './runtime.js';
export { groupsProblem, hybridOnly } from './groups.js';
export { groupName, kexGroupOfSession, negotiatedGroup } from './negotiated.js';
export { handshakes, refusals, tlsRegistry, withTlsMetrics } from './metrics.js';
export { LinkGroups, type LinkGroupSeen, type LinkGroupStatus } from './link-groups.js';
export { NotPostQuantumError, checkClientSocket, watchServer, type ClientWatch, type ConnectionVerdict, type ServerWatch, type TlsLog } from './observe.js';
// watchedConnector (undici) is imported from './undici-connector.js' directly, so that
// importing this index never loads undici.
