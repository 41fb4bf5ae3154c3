import { join } from 'node:path';
import { Ledger } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { inclusionPath } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/proof.js';
import { sqliteTileSource } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/sqlite-tree.js';
import { rangeHashOf } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/tiles.js';
import { type BenchRow, medianOf, percentile, timeEach } from './row.js';

/**
 * Issue 38's rows on the suite's big ledger: the audit path of a random entry read from the tiles (p50), and its
 * size against 32 × ⌈log2 n⌉ bytes.
 */
export function inclusionProofRows(path: string, total: number, samples: number): BenchRow[] {
  const ledger = Ledger.open(path, { readonly: true });
  let x = 987_654_321;
  let bytes = 0;
  const ms = ledger.snapshot(() => {
    const size = ledger.head().seq;
    // As `ledger prove` reads it: the tree's size given, so a leaf's tile is read once per proof.
    const range = rangeHashOf(sqliteTileSource(ledger.db), size);
    return timeEach(samples, () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      bytes = Math.max(bytes, 32 * inclusionPath(x % size, size, range).length);
    });
  });
  ledger.close();
  const bound = 32 * Math.ceil(Math.log2(total));
  return [
    {
      name: 'inclusion_proof_p50',
      value: percentile(ms, 50),
      unit: `ms (audit path of a random entry from the tiles, ${total} entries)`,
      baseline: null,
      ratio: null,
      target: '<= 1',
      ok: percentile(ms, 50) <= 1,
    },
    {
      name: 'inclusion_proof_bytes',
      value: bytes,
      unit: `bytes (largest audit path sampled; 32 × ⌈log2 ${total}⌉ = ${bound}), plus the ~200-byte checkpoint`,
      baseline: bound,
      ratio: bytes / bound,
      target: '<= 1',
      ok: bytes <= bound,
    },
  ];
}

/** Batches of each side run first to warm up (JIT, statements, the tree laid out), not counted. */
const WARMUP_ROUNDS = 2;

/**
 * Durable batch appends to a ledger with its tree against one opened without it (Ledger.openWithoutTree: the same
 * append code, the tree skipped), batches interleaved so the machine's load falls on both alike. The value is the
 * median over the rounds of the ratio of the process CPU time the round's two batches took: the tree's cost is
 * CPU (hashing) and one tile write a batch, while the wall time of a durable batch on a shared machine swings with
 * other processes' fsync traffic (a pair of batches from 0.5x to 2x under load); and a collection of the whole heap
 * or a burst of another process lands in one batch of one round, moving one ratio, not the median. The ratios of
 * the CPU and wall totals are shown beside it.
 */
export function merkleOverheadRow(
  tmp: string,
  input: (i: number) => AppendInput,
  rounds: number,
  batch: number,
): BenchRow {
  const ledgers = {
    with: Ledger.open(join(tmp, 'merkle-with.sqlite'), { create: true }),
    without: Ledger.openWithoutTree(join(tmp, 'merkle-without.sqlite'), { create: true }),
  };
  const cpu = { with: 0, without: 0 };
  const wall = { with: 0, without: 0 };
  const ratios: number[] = [];
  let n = 0;
  try {
    for (let round = 0; round < WARMUP_ROUNDS + rounds; round += 1) {
      const roundCpu = { with: 0, without: 0 };
      for (const kind of round % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        const inputs = Array.from({ length: batch }, () => input(n++));
        const c0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        ledgers[kind].appendBatch(inputs);
        const t1 = process.hrtime.bigint();
        const c = process.cpuUsage(c0);
        roundCpu[kind] = (c.user + c.system) / 1e3;
        if (round < WARMUP_ROUNDS) continue;
        cpu[kind] += roundCpu[kind];
        wall[kind] += Number(t1 - t0) / 1e6;
      }
      if (round >= WARMUP_ROUNDS) ratios.push(roundCpu.with / roundCpu.without);
    }
    if (!ledgers.with.hasTree || ledgers.without.hasTree)
      throw new Error('merkle_append_overhead: a side kept the wrong tree');
  } finally {
    ledgers.with.close();
    ledgers.without.close();
  }
  const ratio = medianOf(ratios);
  return {
    name: 'merkle_append_overhead',
    value: ratio,
    unit: `x (median of ${rounds} rounds' CPU time of a durable batch of ${batch} with the tree / without, interleaved after ${WARMUP_ROUNDS} warm-up; totals: CPU ${(cpu.with / cpu.without).toFixed(3)}x, wall ${(wall.with / wall.without).toFixed(3)}x)`,
    baseline: null,
    ratio,
    target: '<= 1.1',
    ok: ratio <= 1.1,
  };
}
