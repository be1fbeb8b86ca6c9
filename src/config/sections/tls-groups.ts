// The `tls.groups` key of a face's config section, checked against this runtime by
// pqtls's groupsProblem. It lives in config so that config depends on pqtls and never
// the other way round.
import { defaultGroups, groupsProblem } from '../../pqtls/index.js';
import type { ConfigNode } from '../node.js';

/** Validates an optional `groups` key; the runtime's default when absent. */
export function validateGroups(node: ConfigNode): string {
  if (!node.present) return defaultGroups();
  const value = node.requiredString();
  if (!value) return defaultGroups();
  const problem = groupsProblem(value);
  if (problem) node.fail(problem);
  return value;
}
