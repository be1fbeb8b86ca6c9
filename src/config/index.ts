// The daemon config (docs/config.md): one JSON file, QENTROPY_* overrides, validated at start.
export {
  DEFAULT_CONFIG_FILE,
  DEFAULT_STATE_DIR,
  LOG_LEVELS,
  envNameFor,
  environmentVariables,
  loadConfig,
  resolveConfig,
  type LoadConfigOptions,
  type LogLevel,
  type QentropyConfig,
} from './load.js';
export { ConfigError, ConfigNode } from './node.js';
export { sectionFromParser, type ConfigSection, type EnvValueType, type SectionContext } from './section.js';
export type { EntropyConfig, FeederConfig, KmeConfig, QualityConfig } from './sections/index.js';
