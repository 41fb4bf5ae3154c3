import { Ledger } from '../../kernel/ledger/index.js';

/** Append `n` EXCHANGE entries tagged `tag` to the ledger file in one batch (a history for proofs and witnesses). */
export function growLedger(file: string, n: number, tag: string): void {
  const ledger = Ledger.open(file);
  try {
    ledger.appendBatch(
      Array.from({ length: n }, (_, i) => ({
        event_type: 'EXCHANGE',
        submission_id: `${tag}-${i}`,
        decision: 'OK',
        reason: tag,
        metadata: { n: i },
      })),
    );
  } finally {
    ledger.close();
  }
}
