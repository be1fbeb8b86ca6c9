// A real TPM-backed PKCS#11 token for tests: swtpm (a software TPM 2.0) on loopback TCP,
// a tpm2-pkcs11 store made with tpm2_ptool, and the tpm2-pkcs11 module talking to the TPM
// directly (TPM2_PKCS11_TCTI=swtpm:…). tpm2_ptool runs several tpm2-tools commands per
// step and swtpm holds only three transient objects, so the setup goes through a resource
// manager: tpm2-abrmd on a private D-Bus session bus, stopped once the token exists.
// `haveTpm` is false when the Debian packages are missing (scripts/setup.sh installs them).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { waitFor } from '../feeder-harness.js';

export const tpmModule = ['/usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so'].find((p) => fs.existsSync(p));
const have = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
export const haveTpm = tpmModule !== undefined && ['swtpm', 'tpm2_ptool', 'tpm2-abrmd', 'dbus-daemon'].every(have);

export interface TpmToken {
  module: string;
  /** What the module reads from the environment: its store and its TCTI. */
  env: { TPM2_PKCS11_STORE: string; TPM2_PKCS11_TCTI: string; TPM2_PKCS11_LOG_LEVEL: string };
  /** swtpm's command log (level 20: every command and response in hex). */
  commandLog: string;
  stop(): void;
}

/** A free loopback port P whose P+1 is free too: the swtpm TCTI finds the control channel at P+1. */
async function freePortPair(): Promise<[number, number]> {
  const listen = (port: number): Promise<net.Server | undefined> =>
    new Promise((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  const close = (server: net.Server | undefined): Promise<unknown> => new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  for (;;) {
    const first = await listen(0);
    const port = (first!.address() as net.AddressInfo).port;
    const second = port < 65535 ? await listen(port + 1) : undefined;
    await close(first);
    await close(second);
    if (second) return [port, port + 1];
  }
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Starts a software TPM and makes a token labelled `label` with user PIN `pin` under `dir`. */
export async function startTpmToken(dir: string, label: string, pin: string): Promise<TpmToken> {
  const state = path.join(dir, 'tpm-state');
  const store = path.join(dir, 'tpm2-pkcs11');
  fs.mkdirSync(state, { recursive: true, mode: 0o700 });
  fs.mkdirSync(store, { recursive: true, mode: 0o700 });
  const commandLog = path.join(dir, 'swtpm-commands.log');
  const children: ChildProcess[] = [];
  const stop = (): void => {
    for (const c of children.reverse()) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  };
  try {
    const [port, ctrl] = await freePortPair();
    const swtpm = spawn(
      'swtpm',
      ['socket', '--tpm2', '--tpmstate', `dir=${state}`, '--server', `type=tcp,port=${port},bindaddr=127.0.0.1`, '--ctrl', `type=tcp,port=${ctrl},bindaddr=127.0.0.1`,
        '--flags', 'not-need-init,startup-clear', '--log', `file=${commandLog},level=20`],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let swtpmErr = '';
    swtpm.stderr!.on('data', (d: Buffer) => (swtpmErr += d.toString()));
    swtpm.on('exit', (code) => (swtpmErr += ` (exited with ${code})`));
    children.push(swtpm);
    const direct = `swtpm:host=127.0.0.1,port=${port}`;
    await waitFor(() => spawnSync('tpm2_getrandom', ['4'], { env: { ...process.env, TPM2TOOLS_TCTI: direct } }).status === 0, 10_000, 'swtpm').catch((err: Error) => {
      throw new Error(`${err.message}${swtpmErr ? `: ${swtpmErr}` : ''}`);
    });

    // The resource manager, on a session bus of its own, for tpm2_ptool only.
    const bus = spawnSync('dbus-daemon', ['--session', '--fork', '--nosyslog', '--print-address=1', '--print-pid=1'], { encoding: 'utf8' });
    if (bus.status !== 0) throw new Error(`dbus-daemon failed: ${bus.stderr}`);
    const [address, busPid] = bus.stdout.trim().split('\n');
    const busName = `com.intel.tss2.Tabrmd.qe${process.pid}`;
    const env = { ...process.env, DBUS_SESSION_BUS_ADDRESS: address! };
    const abrmd = spawn('tpm2-abrmd', ['--session', '--allow-root', `--tcti=${direct}`, `--dbus-name=${busName}`], { env, stdio: 'ignore' });
    children.push(abrmd);
    const viaRm = { ...env, TPM2TOOLS_TCTI: `tabrmd:bus_type=session,bus_name=${busName}`, TPM2_PKCS11_TCTI: `tabrmd:bus_type=session,bus_name=${busName}` };
    try {
      await waitFor(() => spawnSync('tpm2_getrandom', ['4'], { env: viaRm }).status === 0, 10_000, 'tpm2-abrmd');
      run('tpm2_ptool', ['init', `--path=${store}`], viaRm);
      run('tpm2_ptool', ['addtoken', '--pid=1', `--label=${label}`, `--userpin=${pin}`, '--sopin=97531975', `--path=${store}`], viaRm);
    } finally {
      abrmd.kill('SIGTERM');
      process.kill(Number(busPid), 'SIGTERM');
    }
    return { module: tpmModule!, env: { TPM2_PKCS11_STORE: store, TPM2_PKCS11_TCTI: direct, TPM2_PKCS11_LOG_LEVEL: '0' }, commandLog, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * The data of every TPM2_StirRandom (command code 0x146) the TPM received, in order, read
 * from swtpm's command log: the TPM's own record of what it was seeded with.
 */
export function stirRandomSeeds(commandLog: string): Buffer[] {
  const seeds: Buffer[] = [];
  const text = fs.readFileSync(commandLog, 'utf8');
  for (const chunk of text.split(/^ ?SWTPM_IO_Read: length \d+\n/m).slice(1)) {
    const hex = chunk.split(/^ ?(?:SWTPM_IO_Write|Ctrl|SWTPM_)/m, 1)[0]!.replace(/[^0-9A-Fa-f]/g, '');
    const command = Buffer.from(hex, 'hex');
    if (command.length < 12 || command.readUInt32BE(6) !== 0x146) continue;
    // tag (2) size (4) code (4), then TPM2B_SENSITIVE_DATA: size (2) and the bytes.
    const size = command.readUInt16BE(10);
    seeds.push(command.subarray(12, 12 + size));
  }
  return seeds;
}
