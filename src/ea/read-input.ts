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
    // A regular file's size is known (it may still change while read); anything else is read to its end.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const want = Math.min(stat.isFile() ? Math.max(stat.size - total, 1) : CHUNK_BYTES, maxBytes - total + 1, MAX_INPUT_BYTES);
      const chunk = Buffer.allocUnsafe(want);
      const { bytesRead } = await handle.read(chunk, 0, want, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > maxBytes) throw tooLarge();
      chunks.push(bytesRead === want ? chunk : chunk.subarray(0, bytesRead));
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof InputReadError) throw err;
    throw new InputReadError(`cannot read ${file}: ${(err as Error).message}`);
  } finally {
    await handle.close();
  }
}
