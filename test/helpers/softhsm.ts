// A real SoftHSMv2 token for tests: its own token directory and config file, made with
// softhsm2-util. `module` is undefined when SoftHSMv2 is not installed (the suites that
// need it are then skipped; CI installs it).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const firstExisting = (paths: string[]): string | undefined => paths.find((p) => fs.existsSync(p));

export const softhsmModule = firstExisting(['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so']);
export const haveSofthsm = softhsmModule !== undefined && spawnSync('sh', ['-c', 'command -v softhsm2-util']).status === 0;

/** Makes a token labelled `label` with user PIN `pin` under `dir`; returns its SOFTHSM2_CONF path. */
export function initSofthsmToken(dir: string, label: string, pin: string): string {
  fs.mkdirSync(path.join(dir, 'tokens'), { recursive: true, mode: 0o700 });
  const conf = path.join(dir, 'softhsm2.conf');
  fs.writeFileSync(conf, `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const init = spawnSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', '24680246'], {
    encoding: 'utf8',
    env: { ...process.env, SOFTHSM2_CONF: conf },
  });
  if (init.status !== 0) throw new Error(`softhsm2-util failed: ${init.stderr}`);
  return conf;
}
