/**
 * Root-relative paths as archives and manifests carry them. One normaliser, used by the manifest
 * validator and the archive reader, so what the manifest declares and what the archive holds are
 * compared in the same form.
 */

/** Why a path is unsafe, or null when it is a plain relative path made of ordinary segments. */
export function unsafePathReason(path: string): string | null {
  if (path.length === 0) return 'empty path';
  if (path.includes('\0')) return 'NUL byte in path';
  if (path.includes('\\')) return 'backslash in path';
  if (path.startsWith('/')) return 'absolute path';
  if (/^[A-Za-z]:/.test(path)) return 'drive-letter path';
  for (const segment of path.split('/')) {
    if (segment === '..') return '".." segment';
    if (segment === '.') return '"." segment';
    if (segment === '') return 'empty segment';
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

export function isReservedPath(path: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix));
}

/** Case-folded key: two members that differ only in case collide on case-insensitive filesystems. */
export function foldedPath(path: string): string {
  return path.normalize('NFC').toLowerCase();
}
