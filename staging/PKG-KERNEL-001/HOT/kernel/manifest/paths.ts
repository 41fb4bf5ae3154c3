/**
 * Root-relative paths as archives and manifests carry them. One normaliser, used by the manifest
 * validator and the archive reader, so what the manifest declares and what the archive holds are
 * compared in the same form.
 */

/** Longest path segment (a file or directory name) in UTF-8 bytes: NAME_MAX on every filesystem cplane runs on. */
export const MAX_SEGMENT_BYTES = 255;
/** Longest root-relative path in UTF-8 bytes, leaving room under PATH_MAX (4096) for the root's own path. */
export const MAX_PATH_BYTES = 1024;

/**
 * Characters that make a path print as something else: C0 and C1 controls (newline, escape, …), DEL, the
 * Unicode line and paragraph separators and the bidirectional overrides and isolates. A name holding one
 * could fake a line of output or reorder what a reader sees.
 */
const MISLEADING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;
/** A UTF-16 surrogate without its other half: not a character, and no filesystem name can hold it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a path is unsafe, or null when it is a plain relative path made of ordinary segments. */
export function unsafePathReason(path: string): string | null {
  if (path.length === 0) return 'empty path';
  if (path.includes('\0')) return 'NUL byte in path';
  const misleading = MISLEADING.exec(path);
  if (misleading)
    return `control or formatting character U+${(misleading[0].codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')} in path`;
  if (LONE_SURROGATE.test(path)) return 'unpaired UTF-16 surrogate in path';
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) return `path longer than ${MAX_PATH_BYTES} bytes`;
  if (path.includes('\\')) return 'backslash in path';
  if (path.startsWith('/')) return 'absolute path';
  if (/^[A-Za-z]:/.test(path)) return 'drive-letter path';
  for (const segment of path.split('/')) {
    if (segment === '..') return '".." segment';
    if (segment === '.') return '"." segment';
    if (segment === '') return 'empty segment';
    if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) return `segment longer than ${MAX_SEGMENT_BYTES} bytes`;
  }
  return null;
}

/**
 * The member name an archive entry stands for: one leading `./` (as `tar czf x -C dir .` writes) and,
 * for directories, one trailing `/` are dropped. Everything else must already be canonical.
 */
export function memberName(rawPath: string, isDirectory: boolean): string {
  let path = rawPath.startsWith('./') ? rawPath.slice(2) : rawPath;
  if (isDirectory && path.endsWith('/')) path = path.slice(0, -1);
  return path;
}

/**
 * Paths inside a root that hold the root's own state. No package may ship a file there: a package
 * that owned a receipt, the ledger or the trust store could forge its own install record or trust.
 */
export const RESERVED_PREFIXES: readonly string[] = ['HOT/installed/', 'HOT/ledger/', 'HOT/registries/trust.json'];

/** Compared case-folded: on a case-insensitive filesystem `HOT/Installed/` is `HOT/installed/`. */
export function isReservedPath(path: string): boolean {
  const key = foldedPath(path);
  return RESERVED_PREFIXES.map(foldedPath).some((prefix) =>
    prefix.endsWith('/') ? key.startsWith(prefix) : key === prefix,
  );
}

/** Case-folded key: two members that differ only in case collide on case-insensitive filesystems. */
export function foldedPath(path: string): string {
  return path.normalize('NFC').toLowerCase();
}
