// Reading a data set for `qentropy ea`: a regular file, or a FIFO, a pipe or a device
// (/dev/stdin, /dev/hwrng) read until its end. Anything past the limit is refused with one
// line rather than read: an endless device (/dev/zero) would otherwise grow the process
// until the kernel kills it.
import fsp from 'node:fs/promises';

/** The most bytes one assessment reads: what fs.readFile reads from a regular file (2 GiB - 1). */
export const MAX_INPUT_BYTES = 2 ** 31 - 1;
const CHUNK_BYTES = 1 << 20;

/** What went wrong, as one line meant for the user. */
export class InputReadError extends Error {}

/** The whole content of `file`, at most `maxBytes` bytes; throws InputReadError past that or when unreadable. */
export async function readInput(file: string, maxBytes = MAX_INPUT_BYTES): Promise<Buffer> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputReadError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  const tooLarge = () => new InputReadError(`${file}: more than ${maxBytes} bytes, the most one assessment reads`);
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new InputReadError(`cannot read ${file}: it is a directory`);
    if (stat.isFile() && stat.size > maxBytes) throw tooLarge();
    const chunks: Buffer[] = [];
    let total = 0;
    // Pipes deliver a few KiB a read: read them into one scratch buffer and keep exact copies.
    let scratch: Buffer | undefined;
    for (;;) {
      // One read of a regular file's size, then (it may have grown) chunks until its end.
      const whole = stat.isFile() && total < stat.size;
      const want = Math.min(whole ? stat.size - total : CHUNK_BYTES, maxBytes - total + 1);
      const target = whole ? Buffer.allocUnsafe(want) : (scratch ??= Buffer.allocUnsafe(CHUNK_BYTES));
      const { bytesRead } = await handle.read(target, 0, want, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > maxBytes) throw tooLarge();
      chunks.push(target === scratch ? Buffer.from(target.subarray(0, bytesRead)) : target.subarray(0, bytesRead));
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof InputReadError) throw err;
    throw new InputReadError(`cannot read ${file}: ${(err as Error).message}`);
  } finally {
    await handle.close();
  }
}
