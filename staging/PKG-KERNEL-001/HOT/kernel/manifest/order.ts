import { CpError, show } from '../errors.js';
import type { Manifest } from './manifest.js';

export type Orderable = Pick<Manifest, 'package_id' | 'layer' | 'dependencies'>;

function compareKey(a: Orderable, b: Orderable): number {
  return a.layer - b.layer || (a.package_id < b.package_id ? -1 : a.package_id > b.package_id ? 1 : 0);
}

/** One dependency cycle among `pending`, as ids, first id repeated at the end. */
function findCycle(pending: Map<string, Orderable>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    state.set(id, 'open');
    stack.push(id);
    const node = pending.get(id) as Orderable;
    for (const dep of [...node.dependencies].map((d) => d.package_id).sort()) {
      if (!pending.has(dep)) continue;
      if (state.get(dep) === 'open') return [...stack.slice(stack.indexOf(dep)), dep];
      if (state.get(dep) === undefined) {
        const found = visit(dep);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(id, 'done');
    return null;
  };
  for (const id of [...pending.keys()].sort()) {
    if (state.get(id) === undefined) {
      const found = visit(id);
      if (found) return found;
    }
  }
  return [];
}

function checkLayers(byId: Map<string, Orderable>): void {
  for (const m of byId.values()) {
    for (const dep of m.dependencies) {
      const target = byId.get(dep.package_id);
      if (target && target.layer > m.layer) {
        throw new CpError(
          'ERR_PACKAGE_LAYER',
          `${show(m.package_id)} (layer ${m.layer}) depends on ${show(target.package_id)} (layer ${target.layer})`,
          {
            hint: 'a package may depend only on packages in its own or a lower layer',
            details: {
              package_id: m.package_id,
              layer: m.layer,
              dependency: target.package_id,
              dependency_layer: target.layer,
            },
          },
        );
      }
    }
  }
}

/**
 * SPEC §3.5 install order: layer first, then dependencies before dependents, ties by id.
 * Dependencies on packages outside `manifests` (already installed) do not constrain the order.
 */
export function installOrder<T extends Orderable>(manifests: readonly T[]): T[] {
  const byId = new Map<string, T>();
  for (const m of manifests) {
    if (byId.has(m.package_id)) {
      throw new CpError('ERR_PACKAGE_DUPLICATE', `package ${show(m.package_id)} is listed twice`, {
        hint: 'each package may appear once in an install set',
        details: { package_id: m.package_id },
      });
    }
    byId.set(m.package_id, m);
  }
  checkLayers(byId);
  const waitingOn = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const m of byId.values()) {
    const deps = new Set(m.dependencies.map((d) => d.package_id).filter((id) => byId.has(id)));
    waitingOn.set(m.package_id, deps.size);
    for (const dep of deps) dependents.set(dep, [...(dependents.get(dep) ?? []), m.package_id]);
  }
  const ready = [...byId.values()].filter((m) => waitingOn.get(m.package_id) === 0);
  const out: T[] = [];
  while (ready.length > 0) {
    ready.sort(compareKey);
    const next = ready.shift() as T;
    out.push(next);
    for (const id of dependents.get(next.package_id) ?? []) {
      const left = (waitingOn.get(id) as number) - 1;
      waitingOn.set(id, left);
      if (left === 0) ready.push(byId.get(id) as T);
    }
  }
  if (out.length < byId.size) {
    const done = new Set(out.map((m) => m.package_id));
    const pending = new Map([...byId].filter(([id]) => !done.has(id)));
    const cycle = findCycle(pending);
    throw new CpError('ERR_PACKAGE_CYCLE', `dependency cycle: ${cycle.join(' -> ')}`, {
      hint: 'break the cycle: one of these packages must stop depending on the next',
      details: { cycle },
    });
  }
  return out;
}
