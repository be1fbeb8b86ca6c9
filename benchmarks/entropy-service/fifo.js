// A FIFO in `dir` and a process writing random bytes into it as fast as it can, standing in
// for a QRNG device (issue 30): `device:FIFO` then reads it like a character device.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';

export function startFifoGenerator(dir) {
  const fifo = path.join(dir, 'qrng');
  execFileSync('mkfifo', ['-m', '0600', fifo]);
  const generator = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('fs'), crypto = require('crypto');
       const fd = fs.openSync(process.argv[1], 'w');
       const buf = Buffer.alloc(1 << 20);
       for (;;) { crypto.randomFillSync(buf); try { fs.writeSync(fd, buf); } catch { process.exit(0); } }`,
      fifo,
    ],
    { stdio: 'ignore' },
  );
  return { fifo, stop: () => generator.kill('SIGKILL') };
}
