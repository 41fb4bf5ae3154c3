import semver from 'semver';
import type { Receipt } from '#kernel/registry/receipt.js';
import {
  BOOTSTRAP_PENDING,
  GENESIS_MARK,
  genesisUnfinished,
  missingPackages,
  readBootstrapPending,
} from '#kernel/root/bootstrap-pending.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { receiptsOf } from '../root-state.js';

/** G2: every installed package's dependencies are installed, in range, on a layer no higher than its own; no cycles; no unfinished bootstrap. */
export default defineGate({
  id: 'G2',
  name: 'DEPENDENCIES',
  describe: 'dependencies installed and in range; layer rule; no cycles',
  run(ctx) {
    const receipts = receiptsOf(ctx);
    const errors: Finding[] = [];
    let edges = 0;
    for (const receipt of receipts.values()) {
      for (const dep of receipt.dependencies) {
        edges += 1;
        const installed = receipts.get(dep.package_id);
        if (!installed) {
          errors.push({
            code: 'DEPENDENCY_MISSING',
            message: `${receipt.package_id} needs ${dep.package_id} ${dep.version}, which is not installed`,
          });
        } else if (!semver.satisfies(installed.version, dep.version, { includePrerelease: true })) {
          errors.push({
            code: 'DEPENDENCY_OUT_OF_RANGE',
            message: `${receipt.package_id} needs ${dep.package_id} ${dep.version}, installed is ${installed.version}`,
          });
        } else if (installed.layer > receipt.layer) {
          errors.push({
            code: 'LAYER_VIOLATION',
            message: `${receipt.package_id} (layer ${receipt.layer}) depends on ${dep.package_id} (layer ${installed.layer})`,
          });
        }
      }
    }
    const cycle = findCycle(receipts);
    if (cycle) errors.push({ code: 'DEPENDENCY_CYCLE', message: `dependency cycle: ${cycle.join(' -> ')}` });
    errors.push(...bootstrapFindings(ctx.root, receipts));
    return verdict(this, errors, `${receipts.size} packages, ${edges} dependencies satisfied`);
  },
});

function findCycle(receipts: ReadonlyMap<string, Receipt>): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'visiting');
    stack.push(id);
    for (const dep of receipts.get(id)?.dependencies ?? []) {
      if (!receipts.has(dep.package_id)) continue;
      const cycle = visit(dep.package_id);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(id, 'done');
    return null;
  };
  for (const id of [...receipts.keys()].sort()) {
    const cycle = visit(id);
    if (cycle) return cycle;
  }
  return null;
}

/** A bootstrap that stopped after genesis leaves its record (kernel/root/bootstrap-pending.ts): the root is incomplete. */
function bootstrapFindings(root: string, receipts: ReadonlyMap<string, Receipt>): Finding[] {
  if (genesisUnfinished(root)) {
    return [
      {
        code: 'BOOTSTRAP_INCOMPLETE',
        message: `genesis did not finish (${GENESIS_MARK}); bootstrap into the root again to start it over`,
        path: GENESIS_MARK,
      },
    ];
  }
  const pending = readBootstrapPending(root);
  if (!pending) return [];
  const installed = new Map([...receipts.values()].map((r) => [r.package_id, r.version]));
  const missing = missingPackages(pending, installed);
  const what =
    missing.length === 0
      ? 'its end was never recorded'
      : `${missing.length} package(s) not installed: ${missing.map((p) => `${p.package_id} ${p.version}`).join(', ')}`;
  return [
    {
      code: 'BOOTSTRAP_INCOMPLETE',
      message: `bootstrap ${pending.bootstrap_version} did not finish (${what}); run cplane bootstrap --resume`,
      path: BOOTSTRAP_PENDING,
    },
  ];
}
