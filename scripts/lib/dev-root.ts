import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEV_ROOT } from './repo.js';

/**
 * Import a module from the merged dev root (build/root), where cross-package relative imports resolve.
 * Type it with the source module: `fromDevRoot<typeof import('../../staging/PKG-X-001/HOT/x/y.js')>('HOT/x/y.js')`
 * (a type-only reference, erased at compile time).
 */
export async function fromDevRoot<T>(relPath: string): Promise<T> {
  return (await import(pathToFileURL(join(DEV_ROOT, relPath)).href)) as T;
}
