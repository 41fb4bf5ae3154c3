import { CpError, show } from '../errors.js';

/** One regular-file header in POSIX ustar form, with every variable field fixed for reproducibility. */
export const BLOCK = 512;

function writeString(block: Buffer, offset: number, length: number, value: string): void {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length > length) throw new Error(`ustar field overflow: ${value}`);
  bytes.copy(block, offset);
}

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  writeString(block, offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

/** Split a path into ustar `prefix` (≤155 bytes) and `name` (≤100 bytes) at a slash. */
export function splitUstarPath(path: string): { prefix: string; name: string } {
  if (Buffer.byteLength(path) <= 100) return { prefix: '', name: path };
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name.length > 0) return { prefix, name };
  }
  throw new CpError(
    'ERR_ARCHIVE_PATH_TOO_LONG',
    `path ${show(path)} does not fit a ustar header (name ≤ 100 bytes after a prefix ≤ 155 bytes)`,
    {
      hint: 'shorten the file name or its directory path',
      details: { path },
    },
  );
}

export function fileHeader(path: string, size: number, mode: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  const { prefix, name } = splitUstarPath(path);
  writeString(block, 0, 100, name);
  writeOctal(block, 100, 8, mode);
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeOctal(block, 124, 12, size);
  writeOctal(block, 136, 12, 0);
  block.fill(0x20, 148, 156);
  block[156] = 0x30; // '0': regular file
  writeString(block, 257, 6, 'ustar\0');
  writeString(block, 263, 2, '00');
  writeOctal(block, 329, 8, 0);
  writeOctal(block, 337, 8, 0);
  writeString(block, 345, 155, prefix);
  let sum = 0;
  for (const byte of block) sum += byte;
  writeString(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

/** Zero padding that completes a body of `size` bytes to a whole block. */
export function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** Two zero blocks end a tar stream. */
export const END_OF_ARCHIVE = Buffer.alloc(BLOCK * 2);
