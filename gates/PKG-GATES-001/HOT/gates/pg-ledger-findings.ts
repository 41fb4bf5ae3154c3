import { type Anchor, type Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { pgFutureDated, verifyPgChain } from '#kernel/ledger/pg/pg-checks.js';
import type { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import type { Receipt } from '#kernel/registry/receipt.js';
import { checkpointReportFindings, checkpointSources } from './checkpoint-findings.js';
import type { Finding, GateContext } from './gate.js';

const INSTALL_EVENTS = new Set(['INSTALLED', 'PACKAGE_UPGRADED']);

/** verifyStore's problems under G4's codes, so a finding reads the same whichever store broke. */
const CHAIN_CODES = {
  edited: 'LEDGER_EDITED',
  broken_link: 'LEDGER_BROKEN_LINK',
  gap: 'LEDGER_DELETED',
} as const;

/** PgLedger.contentProblems says what it found in words; the first word names the part (see its messages). */
function contentCode(problem: string): Finding['code'] {
  if (problem.endsWith('is missing: it was deleted'))
    return problem.startsWith('list node ') ? 'LEDGER_CONTENT_LIST_MISSING' : 'LEDGER_CONTENT_BLOCK_MISSING';
  if (problem.startsWith('list node ')) return 'LEDGER_CONTENT_LIST_EDITED';
  if (problem.endsWith('it was put back')) return 'LEDGER_CONTENT_BLOCK_RESTORED';
  return problem.endsWith('was edited') ? 'LEDGER_CONTENT_BLOCK_EDITED' : 'LEDGER_CONTENT_BLOCK_DELETED';
}

/**
 * G4 on a root whose store is PostgreSQL: the chain there re-hashed end to end (what `ledger verify --store`
 * does, the same function), every receipt's anchor and install record found in it, no entry dated in the
 * future, and the root's signed checkpoints matching it. The root's SQLite file still takes what is recorded on
 * this host outside the gateway (a config change, an install after the move), so its own chain must verify too,
 * and a receipt's anchor and install record may be in either chain: the one that was the root's when it installed.
 */
export async function pgLedgerFindings(
  ctx: GateContext,
  store: PgLedger,
  receipts: readonly Receipt[],
  local: Ledger | null,
): Promise<{ errors: Finding[]; warnings: Finding[]; message: string }> {
  const errors: Finding[] = [];
  const newest = receipts.reduce<Anchor | undefined>(
    (best, r) => (!best || r.ledger_anchor.seq > best.seq ? r.ledger_anchor : best),
    undefined,
  );
  const { result, checkpoints, view } = await verifyPgChain(
    store,
    checkpointSources(ctx),
    receipts.map((r) => r.ledger_anchor.seq),
  );
  const bad = result.first_bad;
  if (bad) errors.push({ code: CHAIN_CODES[bad.problem], message: `${bad.id}: ${bad.message}` });
  for (const problem of result.content_problems) errors.push({ code: contentCode(problem), message: problem });
  const localCheck = local === null ? null : verifyLedger(local);
  const localBad = localCheck?.first_bad;
  if (localBad)
    errors.push({
      code: `LEDGER_${localBad.problem.toUpperCase() as Uppercase<typeof localBad.problem>}`,
      message: `the root's SQLite ledger: ${localBad.id ?? `entry #${localBad.seq}`}: ${localBad.message}`,
    });
  const localHead = local?.head().seq ?? 0;
  if (newest && Math.max(view.head().seq, localHead) < newest.seq)
    errors.push({
      code: 'LEDGER_TRUNCATED',
      message: `the chain ends at #${view.head().seq} in PostgreSQL (#${localHead} in the root's SQLite file), before the newest receipt's anchor #${newest.seq}`,
    });
  for (const entry of await pgFutureDated(store, { now: ctx.now() })) {
    errors.push({
      code: 'LEDGER_FUTURE_DATED',
      message: `${entry.event_type} ${entry.id} (#${entry.seq}) is dated ${entry.timestamp}, beyond the allowed clock skew of the checker's time`,
    });
  }
  for (const receipt of receipts) {
    const { seq, hash } = receipt.ledger_anchor;
    const atAnchor = view.at(seq);
    const atLocal = local?.getBySeq(seq);
    if (atAnchor?.entry_hash !== hash && atLocal?.entry_hash !== hash) {
      errors.push({
        code: 'ANCHOR_MISMATCH',
        message: `${receipt.package_id}'s anchor #${seq} ${atAnchor || atLocal ? 'has another hash' : 'is past the end of the ledger'} in PostgreSQL and in the root's SQLite file`,
      });
    }
    const record = (await store.get(receipt.ledger_entry_id)) ?? local?.get(receipt.ledger_entry_id);
    if (!record || !INSTALL_EVENTS.has(record.event_type) || record.submission_id !== receipt.package_id) {
      errors.push({
        code: 'INSTALL_RECORD_MISSING',
        message: `${receipt.package_id} has no ${[...INSTALL_EVENTS].join('/')} record ${receipt.ledger_entry_id} in PostgreSQL or the root's SQLite file`,
      });
    }
  }
  const found = checkpointReportFindings(checkpoints);
  errors.push(...found.errors);
  return {
    errors,
    warnings: found.warnings,
    message: `postgres: ${result.entries} entries verified up to #${result.head.seq}${localCheck ? ` (the root's SQLite file: ${localCheck.entries})` : ''}; ${receipts.length} anchors match; ${found.summary}`,
  };
}
