import { listFutureDated, verifyLedger, type Anchor } from '#kernel/ledger/index.js';
import { checkpointFindings } from '../checkpoint-findings.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { pgLedgerFindings } from '../pg-ledger-findings.js';
import { ledgerOf, localLedgerOf, pgLedgerOf, receiptsOf } from '../root-state.js';

const INSTALL_EVENTS = new Set(['INSTALLED', 'PACKAGE_UPGRADED']);

/**
 * G4: the hash chain verifies end to end, the file's schema is the ledger's, no entry is dated in the future; every anchor a receipt recorded still matches (a rewritten or
 * truncated ledger cannot hide behind a self-consistent chain); every receipt has its install record; every
 * signed checkpoint (the root's and those given) matches the chain. On a root whose store is PostgreSQL, the
 * chain there is the one judged (pg-ledger-findings.ts).
 */
export default defineGate({
  id: 'G4',
  name: 'LEDGER',
  describe: 'the hash chain verifies and matches the recorded anchors; every receipt has its INSTALLED record',
  async run(ctx) {
    const receipts = [...receiptsOf(ctx).values()];
    const pg = pgLedgerOf(ctx);
    if (pg !== null) {
      const found = await pgLedgerFindings(ctx, await pg, receipts, localLedgerOf(ctx));
      return verdict(this, found.errors, found.message, found.warnings);
    }
    const ledger = ledgerOf(ctx);
    const errors: Finding[] = [];
    const newest = receipts.reduce<Anchor | undefined>(
      (best, r) => (!best || r.ledger_anchor.seq > best.seq ? r.ledger_anchor : best),
      undefined,
    );
    const result = verifyLedger(ledger, newest ? { anchor: newest } : {});
    if (!result.ok && result.first_bad) {
      const bad = result.first_bad;
      errors.push({
        code: `LEDGER_${bad.problem.toUpperCase() as Uppercase<typeof bad.problem>}`,
        message: `${bad.id ?? `entry #${bad.seq}`}: ${bad.message}`,
      });
    }
    for (const problem of result.schema_problems ?? [])
      errors.push({
        code: `LEDGER_SCHEMA_${problem.kind.toUpperCase() as Uppercase<typeof problem.kind>}`,
        message: problem.message,
      });
    for (const problem of result.content?.problems ?? [])
      errors.push({
        code: `LEDGER_CONTENT_${problem.kind.toUpperCase() as Uppercase<typeof problem.kind>}`,
        message: problem.message,
      });
    const content = result.content
      ? `; ${result.content.blocks} content blocks (${result.content.redacted_blocks} redacted)`
      : '';
    for (const entry of listFutureDated(ledger, { now: ctx.now() })) {
      errors.push({
        code: 'LEDGER_FUTURE_DATED',
        message: `${entry.event_type} ${entry.id} (#${entry.seq}) is dated ${entry.timestamp}, beyond the allowed clock skew of the checker's time`,
      });
    }
    for (const receipt of receipts) {
      const { seq, hash } = receipt.ledger_anchor;
      const atAnchor = ledger.getBySeq(seq);
      if (!atAnchor || atAnchor.entry_hash !== hash) {
        errors.push({
          code: 'ANCHOR_MISMATCH',
          message: `${receipt.package_id}'s anchor #${seq} ${atAnchor ? 'has another hash' : 'is past the end of the ledger'}`,
        });
      }
      const record = ledger.get(receipt.ledger_entry_id);
      if (!record || !INSTALL_EVENTS.has(record.event_type) || record.submission_id !== receipt.package_id) {
        errors.push({
          code: 'INSTALL_RECORD_MISSING',
          message: `${receipt.package_id} has no ${[...INSTALL_EVENTS].join('/')} record ${receipt.ledger_entry_id}`,
        });
      }
    }
    const checkpoints = checkpointFindings(ctx, ledger);
    errors.push(...checkpoints.errors);
    return verdict(
      this,
      errors,
      `${result.entries} entries verified up to #${result.head.seq}${content}; ${receipts.length} anchors match; ${checkpoints.summary}`,
      checkpoints.warnings,
    );
  },
});
