// The roles `qentropy daemon` can run, made from the validated config. Each role lives in
// its own module (src/roles/<role>.ts) implementing Role; add it to ROLE_BUILDERS.
import type { QentropyConfig } from '../config/index.js';
import type { BlockTester } from '../sources/index.js';
import { EntropyRole, type EntropyRoleDeps } from './entropy.js';
import { FeederRole, type FeederRoleDeps } from './feeder.js';
import { KmeRole, type KmeRoleDeps } from './kme.js';
import { QualityRole, type QualityRoleDeps } from './quality.js';
import type { Role, RoleContext } from './types.js';

export type { Role, RoleContext, SharedServices } from './types.js';
export { runRoles, type RunRolesOptions } from './runner.js';
export { EntropyRole, type EntropyRoleConfig, type EntropyRoleDeps } from './entropy.js';
export { FeederRole, type FeederRoleDeps } from './feeder.js';
export { KmeRole, type KmeRoleDeps } from './kme.js';
export { QualityRole, type QualityRoleDeps } from './quality.js';

export interface RoleDeps {
  /** SP 800-90B tester for raw local sources, for every role that reads one. */
  createTester?: (minEntropyPerByte: number) => BlockTester;
  entropy?: EntropyRoleDeps;
  quality?: QualityRoleDeps;
  kme?: KmeRoleDeps;
  feeder?: FeederRoleDeps;
}

type RoleBuilder = (config: QentropyConfig, context: RoleContext, deps: RoleDeps) => Role | undefined;

// In start order: the entropy role first, so the pool it publishes in `context.shared`
// is there for the quality tap and the KME seed source.
const ROLE_BUILDERS: Record<string, RoleBuilder> = {
  entropy: (config, context, deps) =>
    config.entropy.enabled
      ? new EntropyRole({ ...config.entropy, storageUrl: config.storage.url }, context, {
          ...(deps.createTester ? { createTester: deps.createTester } : {}),
          ...deps.entropy,
        })
      : undefined,
  quality: (config, context, deps) =>
    config.quality.enabled
      ? new QualityRole(
          { ...config.quality, storageUrl: config.storage.url, entropySource: config.entropy.source },
          context,
          {
            pool: () => context.shared?.entropyPool,
            ...(deps.createTester ? { createTester: deps.createTester } : {}),
            ...deps.quality,
          },
        )
      : undefined,
  kme: (config, context, deps) =>
    config.kme.enabled
      ? new KmeRole({ ...config.kme, storageUrl: config.storage.url }, context, {
          pool: () => context.shared?.entropyPool,
          ...deps.kme,
        })
      : undefined,
  // Last, so it can use an entropy API served by the same daemon.
  feeder: (config, context, deps) =>
    config.feeder.enabled
      ? new FeederRole(config.feeder, context, { ...(config.file !== undefined ? { configFile: config.file } : {}), ...deps.feeder })
      : undefined,
};

/** Names of the roles this build can run. */
export const AVAILABLE_ROLES = Object.keys(ROLE_BUILDERS);

/** The roles the config enables, in start order. */
export function buildRoles(config: QentropyConfig, context: RoleContext, deps: RoleDeps = {}): Role[] {
  const roles: Role[] = [];
  const withShared: RoleContext = { ...context, shared: context.shared ?? {} };
  for (const build of Object.values(ROLE_BUILDERS)) {
    const role = build(config, withShared, deps);
    if (role) roles.push(role);
  }
  return roles;
}
