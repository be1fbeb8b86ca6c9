// The Environment= settings of a checkout's feeder unit (systemd/qentropy-feeder.service):
// thread pools and V8 options, so the benchmarks run the daemon as systemd would.
import fs from 'node:fs';
import path from 'node:path';

export function feederUnitEnvironment(checkout) {
  const unit = fs.readFileSync(path.join(checkout, 'systemd', 'qentropy-feeder.service'), 'utf8');
  const env = {};
  // Environment=KEY=VALUE, or Environment="KEY=VALUE WITH SPACES".
  for (const [, key, value] of unit.matchAll(/^Environment="?([A-Z_]+)=(.*?)"?$/gm)) env[key] = value;
  return env;
}

/** The settings as one line, for a table's label. */
export const describeEnvironment = (env) => Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ');
