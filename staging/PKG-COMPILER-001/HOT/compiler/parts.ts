import { createHash } from 'node:crypto';
import { sha256Hex } from '#kernel/canonical.js';

/**
 * Large prompt texts are assembled from the spec's own strings. Concatenating with `+` keeps them as
 * cheap string ropes, and remembering the pieces lets the hasher stream them, so no prompt byte is
 * copied or hashed twice during a compile. The digest equals sha256Hex of the joined text.
 */
const PIECES = new WeakMap<object, readonly string[]>();

export function concat(pieces: readonly string[]): string {
  let out = '';
  for (const piece of pieces) out += piece;
  return out;
}

/** Remember how `owner`'s text was assembled; `owner` must not be copied before it is hashed. */
export function rememberPieces<T extends object>(owner: T, pieces: readonly string[]): T {
  PIECES.set(owner, pieces);
  return owner;
}

export function piecesOf(owner: object): readonly string[] | undefined {
  return PIECES.get(owner);
}

export function sha256OfPieces(pieces: readonly string[] | undefined, whole: string): string {
  if (!pieces) return sha256Hex(whole);
  const hash = createHash('sha256');
  for (const piece of pieces) hash.update(piece);
  return hash.digest('hex');
}

/**
 * Files as fenced blocks without language tags, path on the line before, joined by `separator`.
 * The short glue between two contents is one piece, so hashing costs one update per file content
 * plus one per boundary (each update has a fixed cost that dominates for small strings).
 */
export function filePieces(files: readonly { path: string; content: string }[], separator: string): string[] {
  const out: string[] = [];
  let glue = '';
  for (const file of files) {
    out.push(`${glue}${file.path}\n\`\`\`\n`, file.content);
    glue = `\n\`\`\`${separator}`;
  }
  if (files.length > 0) out.push('\n```');
  return out;
}
