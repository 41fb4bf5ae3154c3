import { CpError } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import type { Receipt } from '../registry/receipt.js';

/**
 * The installed packages' dependency graph with this manifest in place of its installed version (if any)
 * must stay acyclic: an install that closes a cycle is refused here, before G2 could ever see it.
 */
export function checkNoDependencyCycle(manifest: Manifest, receipts: ReadonlyMap<string, Receipt>): void {
  const depsOf = (id: string): string[] =>
    id === manifest.package_id
      ? manifest.dependencies.map((d) => d.package_id)
      : (receipts.get(id)?.dependencies.map((d) => d.package_id) ?? []);
  const known = (id: string): boolean => id === manifest.package_id || receipts.has(id);
  // Only a cycle through the new manifest is new; search from it, depth first, iteratively.
  const start = manifest.package_id;
  const done = new Set<string>();
  const path: string[] = [start];
  const stack: Array<{ id: string; next: string[] }> = [{ id: start, next: depsOf(start) }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as { id: string; next: string[] };
    const dep = top.next.shift();
    if (dep === undefined) {
      done.add(top.id);
      stack.pop();
      path.pop();
      continue;
    }
    if (dep === start) {
      const cycle = [...path, start];
      throw new CpError(
        'ERR_PACKAGE_CYCLE',
        `installing ${start} ${manifest.version} would create a dependency cycle: ${cycle.join(' -> ')}`,
        {
          hint: 'a package may not depend, directly or through others, on a package that depends on it',
          details: { package_id: start, cycle },
        },
      );
    }
    if (done.has(dep) || !known(dep) || path.includes(dep)) continue;
    path.push(dep);
    stack.push({ id: dep, next: depsOf(dep) });
  }
}
