// Ledger rows of SPEC §12. Baselines run in the same process, on the same disk, with the same pragmas.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { sha256Hex } from '../../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js';
import {
  hashInputFromColumns,
  Ledger,
  verifyLedger,
  type AppendInput,
} from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';
import { LEDGER_PAGE_SIZE } from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/open.js';
import {
  insertRowSql,
  LEDGER_DDL,
  LEDGER_FORMAT_VERSION,
} from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/schema.js';
import { defineSuite, percentile, timeEach, type BenchRow } from '../row.js';
import { inclusionProofRows, merkleOverheadRow } from '../merkle-rows.js';

const SESSIONS = 10_000;
const BATCH = 5_000;

function exchangeInput(i: number): AppendInput {
  return {
    event_type: i % 2 === 0 ? 'DISPATCH' : 'EXCHANGE',
    submission_id: `C-${i % 50}`,
    decision: 'SUCCESS',
    reason: 'round trip complete',
    metadata: {
      session_id: `S-${i % SESSIONS}`,
      agent_id: `agent-${i % 20}`,
      work_order_id: `WO-${i % 500}`,
      prompt: `question ${i}`,
      response: `answer ${i}`,
      input_tokens: 120,
      output_tokens: 48,
    },
  };
}

function row(
  name: string,
  value: number,
  unit: string,
  baseline: number | null,
  target: string,
  met: (v: number) => boolean,
  ratio: number | null = null,
): BenchRow {
  return { name, value, unit, baseline, ratio, target, ok: met(ratio ?? value) };
}

/** A plain table with the ledger's columns, indexes and page size but no triggers and no chain, same pragmas. */
function plainTable(path: string): { db: Database.Database; insert: Database.Statement } {
  const db = new Database(path);
  db.pragma(`page_size = ${LEDGER_PAGE_SIZE}`);
  db.pragma('busy_timeout = 10000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(LEDGER_DDL.replace(/CREATE TRIGGER[\s\S]*?END;/g, ''));
  const insert = db.prepare(insertRowSql(LEDGER_FORMAT_VERSION));
  return { db, insert };
}

/** The row `exchangeInput(i)` becomes, as plain column values (ids consecutive and fixed-width like the ledger's). */
function plainRow(i: number): unknown[] {
  const input = exchangeInput(i);
  const hash = sha256Hex(String(i));
  return [
    i + 1,
    `LED-${((0x1000_0000 + i) >>> 0).toString(16).padStart(8, '0')}`,
    input.event_type,
    input.submission_id,
    input.decision,
    input.reason,
    JSON.stringify(input.metadata),
    new Date(1_767_225_600_000 + i).toISOString(),
    hash,
    hash,
  ];
}

/** Durable single appends vs plain INSERTs of the same rows into the same table, each in its own BEGIN IMMEDIATE. */
function appendVsSqlite(tmp: string, n: number, rounds: number): BenchRow {
  const ledger = Ledger.open(join(tmp, 'append.sqlite'), { create: true });
  const plain = plainTable(join(tmp, 'plain.sqlite'));
  const insertOne = plain.db.transaction((args: unknown[]) => plain.insert.run(...args));
  // Alternate one plain insert and one ledger append so both see the same disk (fsync latency drifts on a shared machine).
  const ledgerMs: number[] = [];
  const plainMs: number[] = [];
  for (let i = 0; i < n * rounds; i += 1) {
    plainMs.push(
      ...timeEach(1, () => {
        insertOne.immediate(plainRow(i));
      }),
    );
    ledgerMs.push(
      ...timeEach(1, () => {
        ledger.append(exchangeInput(i));
      }),
    );
  }
  ledger.close();
  plain.db.close();
  // Per-operation medians: a few multi-millisecond fsync stalls should not decide the ratio.
  const ledgerRate = 1000 / percentile(ledgerMs, 50);
  const plainRate = 1000 / percentile(plainMs, 50);
  return row(
    'ledger_append_vs_sqlite',
    ledgerRate,
    'appends/s (1000 / median ms)',
    plainRate,
    '>= 0.8',
    (r) => r >= 0.8,
    ledgerRate / plainRate,
  );
}

/**
 * Plain batched INSERTs of the same rows, same batch size, in BEGIN IMMEDIATE transactions: into a file
 * (the SQLite floor for the batch row, durable), or into `:memory:` (no disk, no WAL, no chain, no JSON work
 * in JS — what SQLite alone does on this machine with the ledger's indexes, the ceiling any design keeps under).
 */
function plainBatchRate(path: string, n: number): number {
  const plain = plainTable(path);
  const insertMany = plain.db.transaction((rows: unknown[][]) => {
    for (const r of rows) plain.insert.run(...r);
  });
  let ms = 0;
  for (let done = 0; done < n; done += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, n - done) }, (_, k) => plainRow(done + k));
    const t0 = process.hrtime.bigint();
    insertMany.immediate(rows);
    ms += Number(process.hrtime.bigint() - t0) / 1e6;
  }
  plain.db.close();
  return (n * 1000) / ms;
}

function memoryCeilingRow(n: number): BenchRow {
  const rate = plainBatchRate(':memory:', n);
  return {
    ...row(
      'ledger_batch_sqlite_memory_ceiling',
      rate,
      `rows/s (plain SQLite in memory, same schema and rows, batches of ${BATCH}, ${n} rows)`,
      null,
      '-',
      () => true,
    ),
    ok: null,
  };
}

/** Build the big ledger with durable batches; the build itself is the batch-append measurement. */
function batchAppend(path: string, total: number, plainRate: number, log: (line: string) => void): BenchRow {
  const ledger = Ledger.open(path, { create: true });
  let nanos = 0n;
  for (let done = 0; done < total; done += BATCH) {
    // The batch's inputs are the caller's to build: made before its clock starts, as plainBatchRate makes its rows.
    const inputs = Array.from({ length: Math.min(BATCH, total - done) }, (_, k) => exchangeInput(done + k));
    const t0 = process.hrtime.bigint();
    ledger.appendBatch(inputs);
    nanos += process.hrtime.bigint() - t0;
    if ((done + BATCH) % 200_000 === 0) log(`  ledger: ${done + BATCH} entries`);
  }
  const seconds = Number(nanos) / 1e9;
  ledger.close();
  const rate = total / seconds;
  log(`  ledger: ${total} entries in ${seconds.toFixed(1)} s`);
  // Judged against plain batched INSERTs of the same rows into a table with the ledger's own indexes (plainTable lays
  // out LEDGER_DDL), in the same run: the rate itself moves with the machine, the ratio is the ledger's own cost.
  return row(
    'ledger_batch_append',
    rate,
    `entries/s (durable, batches of ${BATCH}, ${total} entries; baseline: plain SQLite batches, same schema)`,
    plainRate,
    '>= 0.7',
    (r) => r >= 0.7,
    rate / plainRate,
  );
}

/** verify over the whole ledger vs SHA-256 alone over the same canonical bytes (built untimed, chunk by chunk). */
function verifyVsSha(path: string): BenchRow {
  const ledger = Ledger.open(path);
  const start = process.hrtime.bigint();
  const result = verifyLedger(ledger);
  const verifyMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (!result.ok) throw new Error(`bench ledger does not verify: ${JSON.stringify(result.first_bad)}`);
  let shaMs = 0;
  for (const chunk of ledger.rawChunks(1, 20_000)) {
    const inputs = chunk.map(
      ([, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash]) =>
        hashInputFromColumns({ id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash }),
    );
    const t0 = process.hrtime.bigint();
    for (const input of inputs) sha256Hex(input);
    shaMs += Number(process.hrtime.bigint() - t0) / 1e6;
  }
  ledger.close();
  const verifyRate = (result.entries * 1000) / verifyMs;
  const shaRate = (result.entries * 1000) / shaMs;
  return row(
    'ledger_verify_vs_sha256',
    verifyRate,
    'entries/s',
    shaRate,
    '>= 0.25',
    (r) => r >= 0.25,
    verifyRate / shaRate,
  );
}

/**
 * Query by session through the public API at `total` entries: `ledger_query_session_p50` is the newest page
 * (limit 20, the CLI's `query --session S --limit N` form); the `_all` row returns the whole session.
 */
function querySession(path: string, total: number, samples: number): BenchRow[] {
  const ledger = Ledger.open(path);
  let x = 12345;
  const next = (): string => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return `S-${x % SESSIONS}`;
  };
  let found = 0;
  timeEach(50, () => {
    found += ledger.query({ session_id: next() }).length;
  });
  const page = timeEach(samples, () => {
    found += ledger.query({ session_id: next(), limit: 20 }).length;
  });
  const all = timeEach(samples, () => {
    found += ledger.query({ session_id: next() }).length;
  });
  ledger.close();
  if (found === 0) throw new Error('session query found nothing');
  const perSession = Math.round(total / SESSIONS);
  return [
    row(
      'ledger_query_session_p50',
      percentile(page, 50),
      `ms (newest 20 of a session, ${total} entries)`,
      null,
      '< 1',
      (v) => v < 1,
    ),
    {
      ...row(
        'ledger_query_session_all_p50',
        percentile(all, 50),
        `ms (all ${perSession} entries of a session, ${total} entries)`,
        null,
        '-',
        () => true,
      ),
      ok: null,
    },
  ];
}

export default defineSuite({
  name: 'ledger',
  async run({ quick, tmp, log }) {
    const total = quick ? 100_000 : 1_000_000;
    const rows = [appendVsSqlite(tmp, quick ? 100 : 400, quick ? 3 : 5)];
    const big = join(tmp, 'big.sqlite');
    rows.push(batchAppend(big, total, plainBatchRate(join(tmp, 'plain-batch.sqlite'), total), log));
    rows.push(memoryCeilingRow(total));
    rows.push(verifyVsSha(big));
    rows.push(...querySession(big, total, quick ? 500 : 2000));
    rows.push(...inclusionProofRows(big, total, quick ? 500 : 2000));
    rows.push(merkleOverheadRow(tmp, exchangeInput, quick ? 16 : 40, BATCH));
    return rows;
  },
});
