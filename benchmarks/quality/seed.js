// Seeds a SQLite file with N strictly failing runs, each keeping 5,242,880 random bits.
//   node seed.js FILE N
import crypto from 'node:crypto';

import { load } from './common.js';

const [file, countText] = process.argv.slice(2);
const { openDatabase } = await load('storage/db.js');
const { QualityStore, KEPT_BITS } = await load('quality/store.js');
const db = await openDatabase({ url: `sqlite:${file}` });
const store = await QualityStore.open(db);
const t = Date.now() - 1000 * 600 * Number(countText);
for (let i = 0; i < Number(countText); i++) {
  const completedMs = t + i * 600_000;
  const record = {
    tests_passed: false, time_of_completion: completedMs / 1000, time_of_completion_string: '01/01/2025 00:00',
    nist_all_passed: false, nist_fails: 900, nist_passes: 7928, nist_success_rate: 0.898, uniformity_all_passed: false,
    uniformity_fails: 3, uniformity_passes: 12, uniformity_success_rate: 0.8,
  };
  await store.insertRun({
    status: 'completed', startedMs: completedMs - 30_000, completedMs, source: 'bench', streams: 100, bitsPerStream: 1e6,
    record, strictlyFailing: true, looselyFailing: true, report: { status: 'completed', record },
    data: { bytes: crypto.randomBytes(KEPT_BITS / 8), bits: KEPT_BITS, expiresMs: null },
  });
}
await db.close();
console.log(JSON.stringify({ seeded: Number(countText) }));
