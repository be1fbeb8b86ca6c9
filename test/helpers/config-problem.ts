// The message of the ConfigError a config call throws, for tests of config validation.
import { expect } from 'vitest';

import { ConfigError } from '../../src/config/index.js';

/** The message of the ConfigError `fn` throws (fails the test when it does not throw one). */
export function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}
