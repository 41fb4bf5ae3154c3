import { randomBytes } from 'node:crypto';
import { CpError, show } from '../errors.js';
import { checkReceiptOwnership, checkRemovable } from './checks.js';
import { commitJournal } from './commit.js';
import { noHook, type StepHook } from './hooks.js';
import { writeJournal, type Journal } from './journal.js';
import type { RootSession } from './session.js';

export interface UninstallOutcome {
  package_id: string;
  version: string;
  removed: number;
}

/** Remove a package: refused while another installed package depends on it. Journaled like an install. */
export async function uninstallOne(
  session: RootSession,
  packageId: string,
  hook: StepHook = noHook,
): Promise<UninstallOutcome> {
  const receipts = session.receipts.all();
  const receipt = receipts.get(packageId);
  if (!receipt) {
    throw new CpError('ERR_NOT_INSTALLED', `${show(packageId)} is not installed in ${show(session.root)}`, {
      hint: 'cplane list --root R shows what is installed',
      details: { package_id: packageId },
    });
  }
  const dependents = [...receipts.values()]
    .filter((r) => r.dependencies.some((d) => d.package_id === packageId))
    .map((r) => r.package_id);
  if (dependents.length > 0) {
    throw new CpError(
      'ERR_HAS_DEPENDENTS',
      `cannot uninstall ${packageId}: ${dependents.join(', ')} depend${dependents.length === 1 ? 's' : ''} on it`,
      {
        hint: `uninstall ${dependents.join(', ')} first`,
        details: { package_id: packageId, dependents },
      },
    );
  }
  checkReceiptOwnership(receipt, session.registry);
  checkRemovable(
    session.root,
    receipt.files.map((f) => f.path),
  );
  const txnId = `TXN-${randomBytes(6).toString('hex')}`;
  const journal: Journal = {
    journal_version: 1,
    txn_id: txnId,
    kind: 'uninstall',
    package_id: packageId,
    staging_dir: `HOT/registries/txn/${txnId}`,
    place: [],
    remove: receipt.files.map((f) => f.path),
    owned: [],
    transfers: [],
    installed_meta: {},
    updated_receipts: [],
    receipt: null,
    ledger: {
      event_type: 'PACKAGE_UNINSTALLED',
      decision: 'SUCCESS',
      reason: `uninstalled ${packageId} ${receipt.version}`,
      metadata: { package_id: packageId, version: receipt.version, removed_files: receipt.files.length },
    },
  };
  writeJournal(session.root, journal);
  await commitJournal(session, journal, hook);
  return { package_id: packageId, version: receipt.version, removed: receipt.files.length };
}
