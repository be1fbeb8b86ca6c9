import type { Command } from 'commander';

import { versionInfo } from '../../version.js';

export function registerVersion(program: Command): void {
  program
    .command('version')
    .description('print the package and addon versions and the CPU features in use')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const info = versionInfo();
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(info)}\n`);
        return;
      }
      process.stdout.write(
        [
          `qentropy ${info.package}`,
          `addon    ${info.addon} (Node-API ${info.napi}, Node ${info.node})`,
          `cpu      ${info.cpuFeatures.length ? info.cpuFeatures.join(' ') : '(scalar only)'}`,
        ].join('\n') + '\n',
      );
    });
}
