import { computeEntryHash, GENESIS_HASH, type Anchor } from './entry.js';
import { rowToEntry, type EntryRow, type Ledger } from './ledger.js';

export type VerifyProblem = 'edited' | 'hash_edited' | 'broken_link' | 'deleted' | 'reordered' | 'truncated' | 'anchor_mismatch' | 'unreadable';

export interface VerifyResult {
  ok: boolean;
  entries: number;
  head: Anchor;
  /** The first bad entry (by id when it still exists) and why. */
  first_bad?: { seq: number; id: string | null; problem: VerifyProblem; message: string };
}

/** Recompute the chain from genesis; stop at the first bad entry and say which and why. */
export function verifyLedger(ledger: Ledger, options: { anchor?: Anchor } = {}): VerifyResult {
  let expectedSeq = 1;
  let previous = GENESIS_HASH;
  let count = 0;
  const fail = (seq: number, id: string | null, problem: VerifyProblem, message: string): VerifyResult =>
    ({ ok: false, entries: count, head: { seq: expectedSeq - 1, hash: previous }, first_bad: { seq, id, problem, message } });

  for (const row of ledger.rows() as Iterable<EntryRow>) {
    if (row.seq !== expectedSeq) {
      return fail(expectedSeq, null, 'deleted', `entry #${expectedSeq} is missing (next present is #${row.seq}, ${row.id})`);
    }
    let entry;
    try {
      entry = rowToEntry(row);
    } catch {
      return fail(row.seq, row.id, 'unreadable', `entry ${row.id} has metadata that is not JSON`);
    }
    const recomputed = computeEntryHash({ ...entry });
    if (row.previous_hash !== previous) {
      const problem: VerifyProblem = recomputed === row.entry_hash ? 'reordered' : 'broken_link';
      return fail(row.seq, row.id, problem, `entry ${row.id} (#${row.seq}) does not link to the entry before it`);
    }
    if (recomputed !== row.entry_hash) {
      const problem: VerifyProblem = /^[0-9a-f]{64}$/.test(row.entry_hash) ? 'edited' : 'hash_edited';
      return fail(row.seq, row.id, problem, `entry ${row.id} (#${row.seq}) does not hash to its entry_hash: its content was edited`);
    }
    previous = row.entry_hash;
    expectedSeq += 1;
    count += 1;
  }
  const head: Anchor = { seq: expectedSeq - 1, hash: previous };
  if (options.anchor) {
    const { seq, hash } = options.anchor;
    if (head.seq < seq) {
      return { ok: false, entries: count, head, first_bad: { seq: head.seq + 1, id: null, problem: 'truncated', message: `ledger ends at #${head.seq} but the anchor is #${seq}: entries were removed from the tail` } };
    }
    const atAnchor = ledger.getBySeq(seq);
    const anchorHash = seq === 0 ? GENESIS_HASH : atAnchor?.entry_hash;
    if (anchorHash !== hash) {
      return { ok: false, entries: count, head, first_bad: { seq, id: atAnchor?.id ?? null, problem: 'anchor_mismatch', message: `entry #${seq} does not match the anchor hash` } };
    }
  }
  return { ok: true, entries: count, head };
}
