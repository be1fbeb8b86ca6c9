// A role is one job of `qentropy daemon` (entropy, quality, kme, feeder), enabled by the
// config. The daemon starts the enabled roles in order, reloads them on SIGHUP and stops
// them in reverse order on SIGTERM/SIGINT.
import type { Logger } from 'pino';

import type { EntropyPool } from '../pool/pool.js';

export interface Role {
  readonly name: string;
  start(): Promise<void>;
  /** Stops taking new work, finishes what is in flight, releases resources. */
  stop(): Promise<void>;
  /** Re-reads whatever can change without a restart (certificates, log level, ...). */
  reload?(): Promise<void>;
}

/**
 * What roles in one daemon share. Roles start in order (entropy first), so a later role
 * finds here what an earlier one published at its start.
 */
export interface SharedServices {
  /**
   * The entropy role's supply pool. The quality role draws its test data with
   * `takeForQuality`/`drawForQuality`, so tested bytes are never served to clients.
   */
  entropyPool?: EntropyPool;
}

export interface RoleContext {
  logger: Logger;
  /** The directory for state (default /var/lib/qentropy). */
  stateDir: string;
  /** Shared between the roles of one daemon (created by buildRoles when absent). */
  shared?: SharedServices;
}

/** Makes a role from its config section; registered by name in src/roles/index.ts. */
export type RoleFactory<Config> = (config: Config, context: RoleContext) => Role;
