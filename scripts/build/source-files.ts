import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';

/** A file that goes into a package: its root-relative path and where the build reads it from. */
export interface SourceFile {
  path: string;
  abs: string;
}

/**
 * Every regular file under `dir`, as `prefix/<relative path>`, in name order. `skip` prunes by relative
 * path (directories end with '/'). A symlink is refused: packages carry regular files only.
 */
export function walkFiles(dir: string, prefix: string, skip: (rel: string) => boolean = () => false): SourceFile[] {
  const out: SourceFile[] = [];
  const visit = (abs: string, rel: string): void => {
    for (const name of readdirSync(abs).sort()) {
      const childAbs = join(abs, name);
      const childRel = rel ? `${rel}/${name}` : name;
      const stat = lstatSync(childAbs);
      if (stat.isSymbolicLink()) {
        if (skip(childRel) || skip(`${childRel}/`)) continue;
        throw new CpError('ERR_BUILD_SYMLINK', `${show(childAbs)} is a symbolic link`, {
          hint: 'packages carry regular files only; replace the link with the file',
          details: { path: childAbs },
        });
      }
      if (stat.isDirectory()) {
        if (!skip(`${childRel}/`)) visit(childAbs, childRel);
      } else if (stat.isFile() && !skip(childRel)) {
        out.push({ path: `${prefix}/${childRel}`, abs: childAbs });
      }
    }
  };
  visit(dir, '');
  return out;
}
