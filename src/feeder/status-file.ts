// The status file `qentropy feeder status` reads: JSON written atomically (temporary file,
// then rename) so a reader never sees half of it. It holds counters and states only,
// never a token or PIN.
import fs from 'node:fs/promises';
import path from 'node:path';

import type { FeederStatus } from './status.js';

export async function writeStatusFile(file: string, status: FeederStatus): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  await fs.writeFile(tmp, `${JSON.stringify(status, null, 2)}\n`, { mode: 0o644 });
  await fs.rename(tmp, file);
}

export async function readStatusFile(file: string): Promise<FeederStatus> {
  return JSON.parse(await fs.readFile(file, 'utf8')) as FeederStatus;
}
