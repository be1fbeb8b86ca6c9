// What a role's config section provides. Each role owns one file in ./sections and the
// core (./load.ts) only lists them: adding or changing a section touches no shared file.
import type { ConfigNode } from './node.js';
import type { PathKeys } from './paths.js';

/** How an environment variable's text becomes a config value. */
export type EnvValueType = 'string' | 'integer' | 'number' | 'boolean';

export interface SectionContext {
  /** The resolved state directory (for defaults of files under it). */
  stateDir: string;
}

export interface ConfigSection<T> {
  /** The section's top-level key in the config file. */
  readonly key: string;
  /**
   * Validates the raw section (an absent section arrives as an absent node) and returns the
   * typed, defaulted settings. Report problems with node.fail / the node helpers; never throw.
   */
  validate(node: ConfigNode, context: SectionContext): T;
  /**
   * Leaf keys (relative to the section, dotted) that `QENTROPY_*` variables may set; the
   * variable name is derived: `entropy` + `listen.port` -> QENTROPY_ENTROPY_LISTEN_PORT,
   * camelCase becoming SNAKE_CASE (`pool.capacityBytes` -> ..._POOL_CAPACITY_BYTES).
   */
  readonly env?: Readonly<Record<string, EnvValueType>>;
  /**
   * Keys (relative to the section, dotted, `*` for every member) that hold file paths or
   * storage URLs: relative ones in the config file resolve against the file's folder.
   */
  readonly paths?: PathKeys;
}

/**
 * Wraps a role's own parser that throws on the first problem (message `key.path: problem`)
 * as a ConfigSection. An absent section yields `absent` without calling the parser.
 */
export function sectionFromParser<T, A>(
  key: string,
  parse: (raw: unknown, at: string, context: SectionContext) => T,
  absent: A,
): ConfigSection<T | A> {
  return {
    key,
    validate(node, context) {
      if (!node.present) return absent;
      try {
        return parse(node.value, node.path, context);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        // The parser's message already starts with the key path.
        node.report(message.startsWith(key) ? message : `${node.path}: ${message}`);
        return absent;
      }
    },
  };
}
