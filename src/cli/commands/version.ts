import type { Command } from 'commander';

import { versionInfo, versionLines } from '../../version.js';

export function registerVersion(program: Command): void {
  program
    .command('version')
    .description('print the package version, the addon binary in use (and where it was loaded from), Node, CPU features, and the OpenSSL version with its post-quantum support')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const info = versionInfo();
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(info)}\n`);
        return;
      }
      const lines = versionLines(info);
      const width = Math.max(...lines.map(([label]) => label.length)) + 1;
      process.stdout.write(lines.map(([label, value]) => `${label.padEnd(width)}${value}`).join('\n') + '\n');
    });
}
