// The roles `qentropy daemon` can run, made from the validated config. Each role lives in
// its own module (src/roles/<role>.ts) implementing Role; add it to ROLE_BUILDERS. A
// role's module is imported only when the config enables it: a feeder-only daemon does
// not load the HTTP framework, the account store or the KME (docs/feeder.md, "Memory").
import type { QentropyConfig } from '../config/index.js';
import type { BlockTester } from '../sources/index.js';
import type { EntropyRoleDeps } from './entropy.js';
import type { FeederRoleDeps } from './feeder.js';
import type { KmeRoleDeps } from './kme.js';
import type { QualityRoleDeps } from './quality.js';
import type { Role, RoleContext } from './types.js';

export type { Role, RoleContext, SharedServices } from './types.js';
export { runRoles, type RunRolesOptions } from './runner.js';
export type { EntropyRole, EntropyRoleConfig, EntropyRoleDeps } from './entropy.js';
export type { FeederRole, FeederRoleDeps } from './feeder.js';
export type { KmeRole, KmeRoleDeps } from './kme.js';
export type { QualityRole, QualityRoleDeps } from './quality.js';

export interface RoleDeps {
  /** SP 800-90B tester for raw local sources, for every role that reads one. */
  createTester?: (minEntropyPerByte: number) => BlockTester;
  entropy?: EntropyRoleDeps;
  quality?: QualityRoleDeps;
  kme?: KmeRoleDeps;
  feeder?: FeederRoleDeps;
}

type RoleBuilder = (config: QentropyConfig, context: RoleContext, deps: RoleDeps) => Promise<Role | undefined>;

// In start order: the entropy role first, so the pool it publishes in `context.shared`
// is there for the quality tap and the KME seed source.
const ROLE_BUILDERS: Record<string, RoleBuilder> = {
  entropy: async (config, context, deps) =>
    config.entropy.enabled
      ? new (await import('./entropy.js')).EntropyRole({ ...config.entropy, storageUrl: config.storage.url }, context, {
          ...(deps.createTester ? { createTester: deps.createTester } : {}),
          ...deps.entropy,
        })
      : undefined,
  quality: async (config, context, deps) =>
    config.quality.enabled
      ? new (await import('./quality.js')).QualityRole(
          { ...config.quality, storageUrl: config.storage.url, entropySource: config.entropy.source },
          context,
          {
            pool: () => context.shared?.entropyPool,
            ...(deps.createTester ? { createTester: deps.createTester } : {}),
            ...deps.quality,
          },
        )
      : undefined,
  kme: async (config, context, deps) =>
    config.kme.enabled
      ? new (await import('./kme.js')).KmeRole({ ...config.kme, storageUrl: config.storage.url }, context, {
          pool: () => context.shared?.entropyPool,
          ...deps.kme,
        })
      : undefined,
  // Last, so it can use an entropy API served by the same daemon.
  feeder: async (config, context, deps) =>
    config.feeder.enabled
      ? new (await import('./feeder.js')).FeederRole(config.feeder, context, { ...(config.file !== undefined ? { configFile: config.file } : {}), ...deps.feeder })
      : undefined,
};

/** Names of the roles this build can run. */
export const AVAILABLE_ROLES = Object.keys(ROLE_BUILDERS);

/** The roles the config enables, in start order (each role's module loaded only if enabled). */
export async function buildRoles(config: QentropyConfig, context: RoleContext, deps: RoleDeps = {}): Promise<Role[]> {
  const roles: Role[] = [];
  const withShared: RoleContext = { ...context, shared: context.shared ?? {} };
  for (const build of Object.values(ROLE_BUILDERS)) {
    const role = await build(config, withShared, deps);
    if (role) roles.push(role);
  }
  return roles;
}
