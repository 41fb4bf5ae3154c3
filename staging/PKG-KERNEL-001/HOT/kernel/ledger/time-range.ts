import type Database from 'better-sqlite3';

/** An inclusive range of chain positions; empty when `fromSeq > toSeq`. */
export interface SeqRange {
  fromSeq: number;
  toSeq: number;
}

/**
 * A time range as a range of chain positions. Appends never let a timestamp go backwards along the chain,
 * so the entries between two times are contiguous in `seq`, and binary search over the primary key finds
 * their ends in about log2(n) row lookups — what a timestamp index would give, without writing one on
 * every append. `probe` is `SELECT seq, timestamp FROM entries WHERE seq >= ? ORDER BY seq LIMIT 1` (raw),
 * so a missing row (a tampered file) cannot stall the search.
 */
export function seqRangeForTimes(
  probe: Database.Statement,
  headSeq: number,
  since: string | undefined,
  until: string | undefined,
): SeqRange {
  const fromSeq = since === undefined ? 1 : firstSeqWhere(probe, headSeq, (timestamp) => timestamp >= since);
  const toSeq = until === undefined ? headSeq : firstSeqWhere(probe, headSeq, (timestamp) => timestamp > until) - 1;
  return { fromSeq, toSeq };
}

/** The smallest seq in 1..headSeq+1 from which `holds` is true, given that it never turns false again. */
function firstSeqWhere(probe: Database.Statement, headSeq: number, holds: (timestamp: string) => boolean): number {
  let lo = 1;
  let hi = headSeq + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const row = probe.get(mid) as [number, string] | undefined;
    if (!row || holds(row[1])) hi = mid;
    else lo = Math.min(row[0], hi - 1) + 1;
  }
  return lo;
}
