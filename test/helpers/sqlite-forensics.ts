// An attacker's view of SQLite files: every record of a given shape found anywhere in the
// bytes of a file (live pages, free space, WAL frames of any age), without SQLite. A record
// is a header (varint size, then one varint serial type per column) and a body
// (sqlite.org/fileformat2.html, "Record Format"); a deleted cell whose first bytes were
// reused still has its header and body, so this finds whatever secure_delete did not zero.
import fs from 'node:fs';
import path from 'node:path';

export type Column = 'text' | 'int' | 'blob';
export type Value = string | number | Buffer;

const INT_BYTES = [0, 1, 2, 3, 4, 6, 8];

function varint(b: Buffer, at: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = 0; i < 9 && at + i < b.length; i++) {
    const byte = b[at + i]!;
    if (i === 8) return { value: value * 256 + byte, next: at + 9 };
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return { value, next: at + i + 1 };
  }
  return undefined;
}

function fits(type: number, column: Column): boolean {
  if (column === 'int') return (type >= 1 && type <= 6) || type === 8 || type === 9;
  if (column === 'text') return type >= 13 && type % 2 === 1;
  return type >= 12 && type % 2 === 0;
}

function sizeOf(type: number): number {
  if (type <= 6) return INT_BYTES[type]!;
  if (type === 7) return 8;
  if (type === 8 || type === 9) return 0;
  return type % 2 === 0 ? (type - 12) / 2 : (type - 13) / 2;
}

function decode(b: Buffer, at: number, type: number): Value {
  const n = sizeOf(type);
  if (type === 8) return 0;
  if (type === 9) return 1;
  if (type <= 6) return n === 0 ? 0 : b.readIntBE(at, Math.min(n, 6)); // enough for the checks here
  const bytes = b.subarray(at, at + n);
  return type % 2 === 1 ? bytes.toString('utf8') : Buffer.from(bytes);
}

/**
 * Every record with exactly these column kinds in `bytes`, decoded. The search starts at
 * the serial types and does not need the header's size varint before them: deleting a cell
 * overwrites its first four bytes (a freeblock's link and size), which can be that varint.
 */
export function recordsIn(bytes: Buffer, columns: readonly Column[]): Value[][] {
  const out: Value[][] = [];
  for (let q = 0; q < bytes.length; q++) {
    const types: number[] = [];
    let at = q;
    while (types.length < columns.length) {
      const t = varint(bytes, at);
      if (!t || !fits(t.value, columns[types.length]!)) break;
      types.push(t.value);
      at = t.next;
    }
    if (types.length !== columns.length) continue;
    const bodyLength = types.reduce((sum, t) => sum + sizeOf(t), 0);
    if (at + bodyLength > bytes.length) continue;
    let offset = at;
    out.push(types.map((t) => {
      const v = decode(bytes, offset, t);
      offset += sizeOf(t);
      return v;
    }));
  }
  return out;
}

/** Every regular file under `dir`, read whole: what someone holding the disk has. */
export function filesUnder(dir: string): Array<{ file: string; bytes: Buffer }> {
  const out: Array<{ file: string; bytes: Buffer }> = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(file));
    else if (entry.isFile()) out.push({ file, bytes: fs.readFileSync(file) });
  }
  return out;
}
