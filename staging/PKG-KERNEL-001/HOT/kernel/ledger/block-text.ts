import { constants as bufferConstants, isUtf8 } from 'node:buffer';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * How a content block's text is kept in `content_blocks.text`: as TEXT, or as a BLOB of its UTF-8 bytes
 * compressed with raw DEFLATE when that saves enough (`typeof(text)` tells the two apart). Only the stored form
 * changes: the digest is always SHA-256 of the uncompressed UTF-8 bytes, so the hash chain, exports, golden
 * vectors and PostgreSQL (which keeps plain text: TOAST compresses large values itself) are the same as before.
 *
 * Raw DEFLATE at zlib's default level: on a coding session's blocks it keeps a third of the bytes at ~30 MB/s and
 * inflates at several hundred; brotli saves a few points more but writes at half the speed, inside the write lock.
 */

/** Below this many bytes a block stays TEXT: DEFLATE saves a few dozen bytes at most, at a zlib call per read. */
export const PACK_MIN_BYTES = 128;

/** Whether `size` is a byte count a stored block can have (a hostile file may record anything). */
function plausibleSize(size: unknown): size is number {
  return typeof size === 'number' && Number.isSafeInteger(size) && size >= 1 && size <= bufferConstants.MAX_LENGTH;
}

/**
 * What to store for a block of `size` UTF-8 bytes: its DEFLATE bytes when they are at most 7/8 of it (smaller
 * savings are not worth an inflate on every read), else the text itself.
 */
export function packBlock(text: string, size: number): string | Buffer {
  if (size < PACK_MIN_BYTES) return text;
  const packed = deflateRawSync(Buffer.from(text, 'utf8'), deflateFor(size));
  return packed.length <= size - (size >> 3) ? packed : text;
}

/**
 * A window just large enough to see the whole block, and hash tables to match. zlib's defaults set up ~256 KiB
 * of state per call, which for a conversation's typical new block of a few hundred bytes costs more than the
 * compression (fresh pages, inside the write lock). A window that covers the input finds every match the
 * default one would; any raw DEFLATE stream inflates with the default window.
 */
function deflateFor(size: number): { windowBits: number; memLevel: number } {
  // zlib keeps 262 bytes of lookahead out of the window; raw DEFLATE takes windows of 2^9 to 2^15 bytes.
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(size + 262))));
  return { windowBits, memLevel: Math.min(8, windowBits - 6) };
}

/** A stored block that does not give back text of its recorded size: why, in words a verify report can carry. */
export class BlockDamage {
  constructor(readonly why: string) {}
}

/**
 * A stored block's text: TEXT as it is, a BLOB inflated. Inflation is bounded by the recorded size, so a
 * hostile file's zip bomb costs no more memory than the block claims; a BLOB that does not inflate to exactly
 * that many bytes of UTF-8 (or a value of another type) is damage, returned rather than thrown so readers can
 * mark it and verify can report it. A TEXT block is not checked here: verify re-hashes every block.
 */
export function unpackBlock(stored: unknown, size: unknown): string | BlockDamage {
  if (typeof stored === 'string') return stored;
  if (!Buffer.isBuffer(stored)) return new BlockDamage(`it holds a ${typeof stored}, not text or compressed text`);
  if (!plausibleSize(size)) return new BlockDamage(`its recorded size ${String(size)} is not a byte count`);
  let bytes: Buffer;
  try {
    bytes = inflateRawSync(stored, { maxOutputLength: size });
  } catch (error) {
    // zlib reports output past maxOutputLength as a RangeError, a malformed stream as a plain Error.
    return new BlockDamage(
      error instanceof RangeError
        ? `its compressed bytes inflate past its recorded size (${size} bytes)`
        : `its compressed bytes do not inflate (${(error as Error).message})`,
    );
  }
  if (bytes.length !== size)
    return new BlockDamage(`its compressed bytes inflate to ${bytes.length} bytes, not its recorded size (${size})`);
  if (!isUtf8(bytes)) return new BlockDamage('its compressed bytes inflate to bytes that are not UTF-8');
  return bytes.toString('utf8');
}
