// One KME site for the benchmark, in its own process: `node site.js CONFIG.json`.
// Prints "listening PORT" once serving; stops on SIGTERM.
import fs from 'node:fs';

import { dist } from './dist.js';

const { parseKmeConfig } = await import(dist('src/config/sections/kme.js'));
const { KmeSite } = await import(dist('src/kme/site.js'));
const { systemSeedSource } = await import(dist('src/kme/seed-source.js'));

const config = parseKmeConfig(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const site = await KmeSite.create(config, { seedSource: systemSeedSource() });
await site.start();
process.stdout.write(`listening ${site.port}\n`);
process.on('SIGTERM', () => {
  // Group-commit statistics: how many operations shared each transaction (one fsync each).
  const stats = site.service.writes?.stats;
  if (stats) process.stderr.write(`site ${config.id}: ${stats.operations} write operations in ${stats.transactions} transactions\n`);
  void site.stop().then(() => process.exit(0));
});
