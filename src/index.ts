// Library entry point: every CLI command is also a function here.
export { addonInfo } from './native/addon.js';
export { versionInfo, type VersionInfo } from './version.js';
export {
  aperiodicTemplates,
  formatReport,
  inspectSequenceFile,
  readSequenceFile,
  runBattery,
  runBatteryOnFile,
  runTest,
  StsAbortError,
  StsInputError,
  toJson as stsJson,
  TEST_NAMES as STS_TEST_NAMES,
  type BatteryResult,
  type BatterySummary,
  type QualityCriteria,
  type RunBatteryOptions,
  type StsParams,
  type TestName as StsTestName,
} from './sts/index.js';
export {
  codecKernel,
  decodeApplianceResponse,
  decodeEntropyResponse,
  decodeEntropyResponseInto,
  encodeApplianceResponse,
  encodeEntropyResponse,
  encodeEntropyResponseInto,
  entropyResponseLength,
  isCodecError,
  type ApplianceBlocks,
  type ApplianceDecodeOptions,
  type CodecError,
  type CodecErrorCode,
  type CodecOptions,
} from './native/codec.js';
export {
  EntropyClient,
  EntropyClientError,
  entropyStream,
  fetchEntropy,
  RetryPolicy,
  type EntropyClientOptions,
  type RetryPolicyOptions,
} from './client/index.js';
export { fetchCommand, type FetchCommandOptions } from './cli/commands/fetch.js';
export { runDaemon, type DaemonOptions } from './cli/commands/daemon.js';
export { EntropyPool, PoolFiller, type PoolStats } from './pool/index.js';
export { buildEntropyApp, type EntropyAppOptions } from './server/app.js';
export { openDatabase, parseStorageUrl } from './storage/db.js';
export type { Db } from './storage/types.js';
export { AccountStore, parseBearer, parsePeriod } from './accounts/index.js';
export { ConfigError, loadConfig, resolveConfig, type QentropyConfig } from './config/index.js';
export { createTokenCommand, listTokensCommand, revokeTokenCommand } from './cli/commands/token.js';
export { runQualityOnce, printQualityReport } from './cli/commands/quality.js';
export { feederStatus } from './cli/commands/feeder.js';
export {
  createCertificateAuthority,
  initCaFiles,
  issueKmeCertificate,
  issueKmeFiles,
  issueSaeCertificate,
  issueSaeFiles,
  loadCaFiles,
} from './pki/index.js';
export { EtsiClient, EtsiClientError, KmeSite, buildKmeServer } from './kme/index.js';
export { QualityService, buildQualityApp } from './quality/index.js';
export { Feeder, buildFeeder } from './feeder/index.js';
export { runRoles, buildRoles } from './roles/index.js';
