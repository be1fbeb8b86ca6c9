import type { Command } from 'commander';

import { versionInfo } from '../../version.js';

export function registerVersion(program: Command): void {
  program
    .command('version')
    .description('print the package and addon versions, the CPU features in use, and the OpenSSL version with its post-quantum support')
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
          `openssl  ${info.openssl}; hybrid post-quantum TLS groups ${info.hybridGroups ? 'available' : 'not available (needs Node.js 22.20+, 24 or 26)'}; default tls.groups ${info.defaultGroups}`,
          `ml-kem   ${info.mlkem} (inter-site ratchet)`,
        ].join('\n') + '\n',
      );
    });
}
