import type { InstallOutcome } from './install.js';
import type { RepairReport } from './repair.js';

export function outcomeJson(o: InstallOutcome): Record<string, unknown> {
  return {
    package_id: o.package_id,
    version: o.version,
    action: o.action,
    previous_version: o.previous_version,
    files: o.files,
    removed: o.removed,
    transfers: o.transfers,
    dev_waiver: o.dev_waiver,
    ledger_entry_id: o.receipt?.ledger_entry_id ?? null,
    ledger_anchor: o.receipt?.ledger_anchor ?? null,
    ms: Math.round(o.ms),
  };
}

/** One progress line per package: what happened and how long it took. */
export function outcomeLine(o: InstallOutcome): string {
  const ms = `${Math.round(o.ms)} ms`;
  if (o.action === 'unchanged') return `${o.package_id} ${o.version} is already installed; nothing to do (${ms})`;
  const verb =
    o.action === 'upgraded'
      ? `upgraded ${o.package_id} ${o.previous_version} -> ${o.version}`
      : `installed ${o.package_id} ${o.version}`;
  const extra = [`${o.files} files`];
  if (o.removed > 0) extra.push(`${o.removed} removed`);
  if (o.transfers > 0) extra.push(`${o.transfers} taken over`);
  if (o.dev_waiver) extra.push('signature waived (--dev)');
  const anchor = o.receipt
    ? `, ledger ${o.receipt.ledger_anchor.seq}:${o.receipt.ledger_anchor.hash.slice(0, 12)}`
    : '';
  return `${verb}: ${extra.join(', ')}${anchor} (${ms})`;
}

export function repairLines(repair: RepairReport): string[] {
  const lines: string[] = [];
  if (repair.rolled_forward)
    lines.push(
      `repaired: finished the interrupted ${repair.rolled_forward.kind} of ${repair.rolled_forward.package_id} (${repair.rolled_forward.txn_id})`,
    );
  if (repair.rolled_back.length > 0)
    lines.push(`repaired: discarded ${repair.rolled_back.length} unfinished staging area(s)`);
  return lines;
}
