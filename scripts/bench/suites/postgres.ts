// The ledger on PostgreSQL (a throwaway server from the installed binaries, fsync and synchronous_commit on):
// one durable append against a plain INSERT of the same row into a table with the same columns and indexes on
// the same server, and batched appends per second. Without PostgreSQL the suite reports nothing.
import type * as PgLedgerModule from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { join } from 'node:path';
import { createDatabase, PG_MISSING, pgBinDir, startPgServer, type PgServer } from '../../lib/pg-server.js';
import { bootstrapServedRoot, cplaneCli, startServe, stopAll } from '../../lib/served-root.js';
import { startUpstreamProcess, throughput } from '../peers/load.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';

const { PgLedger } = await fromDevRoot<typeof PgLedgerModule>('HOT/kernel/ledger/pg/pg-ledger.js');

const entry = (n: number) => ({
  event_type: 'EXCHANGE',
  submission_id: 'anthropic.messages',
  decision: 'SUCCESS',
  reason: 'Exchange completed',
  metadata: {
    agent_id: 'AGENT-1',
    input_tokens: 1200 + n,
    latency_ms: 812,
    output_tokens: 40,
    session_id: `SES-${n % 50}`,
  },
});

async function timeAsync(iterations: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const start = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - start) / 1e3);
  }
  return out;
}

const AUTH_SECRET = 'bench-auth-secret-0123456789abcdef';

/**
 * `cplane serve` requests per second with 64 concurrent keep-alive clients, on the root's SQLite files and on
 * PostgreSQL (the same root, CPLANE_DATABASE_URL), alternated twice in the same run against one local upstream.
 */
async function gatewayRps(
  server: PgServer,
  tmp: string,
  quick: boolean,
  log: (line: string) => void,
): Promise<BenchRow> {
  const storeUrl = await createDatabase(server, 'gateway_rps');
  const { root, key } = bootstrapServedRoot(join(tmp, 'pg-gateway'), AUTH_SECRET, 'AGENT-BENCH');
  // Limits are not what this measures.
  for (const scope of ['agent', 'work_order', 'session'])
    cplaneCli(['config', 'set', `budget.limits.${scope}.default.max_tokens`, '1e12', '--root', root]);
  const children = [];
  try {
    const up = await startUpstreamProcess();
    children.push(up.child);
    const env = { CPLANE_AUTH_SECRET: AUTH_SECRET, ANTHROPIC_BASE_URL: up.url, ANTHROPIC_API_KEY: 'sk-ant-bench' };
    const headers = (i: number): Record<string, string> => ({
      'x-api-key': key,
      'x-cplane-session': `SES-RPS-${i % 4096}`,
    });
    const ms = quick ? 3000 : 8000;
    const measure = async (extra: NodeJS.ProcessEnv): Promise<number> => {
      const served = await startServe(root, { ...env, ...extra });
      try {
        await throughput(served.url, headers, 64, 1000);
        return await throughput(served.url, headers, 64, ms);
      } finally {
        await stopAll([served.child]);
      }
    };
    const sqlite: number[] = [];
    const pg: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      sqlite.push(await measure({ CPLANE_DATABASE_URL: '' }));
      pg.push(await measure({ CPLANE_DATABASE_URL: storeUrl }));
    }
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    const ratio = sum(pg) / sum(sqlite);
    log(
      `postgres: gateway c64 ${sqlite.map((r) => r.toFixed(0)).join('/')} req/s on SQLite, ${pg.map((r) => r.toFixed(0)).join('/')} on PostgreSQL`,
    );
    return {
      name: 'gateway_rps_c64_pg',
      value: ratio,
      unit: 'x (req/s on PostgreSQL / on SQLite, 64 clients)',
      baseline: sum(sqlite) / sqlite.length,
      ratio,
      target: '>= 0.7',
      ok: ratio >= 0.7,
    };
  } finally {
    await stopAll(children);
  }
}

export default defineSuite({
  name: 'postgres',
  async run({ quick, tmp, log }) {
    if (pgBinDir() === null) {
      log(`postgres: skipped: ${PG_MISSING}`);
      return [];
    }
    const server = await startPgServer();
    const ledger = await PgLedger.open(server.url, { create: true });
    try {
      const pool = ledger.pool;
      await pool.query('CREATE TABLE plain (LIKE cplane_entries INCLUDING ALL)');
      const runs = quick ? 100 : 400;
      for (let i = 0; i < 20; i += 1) await ledger.append(entry(i));
      // Interleaved, so both see the same disk and the same moment of the machine.
      const append: number[] = [];
      const insert: number[] = [];
      for (let round = 0; round < 4; round += 1) {
        append.push(...(await timeAsync(runs / 4, (i) => ledger.append(entry(i)))));
        const base = round * runs;
        insert.push(
          ...(await timeAsync(runs / 4, (i) =>
            pool.query(
              'INSERT INTO plain (seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash, session_id, agent_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)',
              [
                base + i + 1,
                `LED-${(base + i).toString(16).padStart(8, '0')}`,
                'EXCHANGE',
                Buffer.from('anthropic.messages'),
                Buffer.from('SUCCESS'),
                Buffer.from('Exchange completed'),
                JSON.stringify(entry(i).metadata),
                new Date().toISOString(),
                'a'.repeat(64),
                'b'.repeat(64),
                Buffer.from(`SES-${i % 50}`),
                Buffer.from('AGENT-1'),
              ],
            ),
          )),
        );
      }
      const appendP50 = percentile(append, 50);
      const insertP50 = percentile(insert, 50);
      const batchSize = 1000;
      const batches = quick ? 20 : 100;
      const batch = (b: number) => Array.from({ length: batchSize }, (_, i) => entry(b * batchSize + i));
      // Warmed as the gateway rows are: the COPY path's code compiled and the pool's connection open.
      for (let b = 0; b < 3; b += 1) await ledger.appendBatch(batch(b));
      const started = process.hrtime.bigint();
      for (let b = 0; b < batches; b += 1) await ledger.appendBatch(batch(b));
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const perSecond = (batches * batchSize) / seconds;
      log(`postgres: append p50 ${appendP50.toFixed(0)} µs, plain INSERT p50 ${insertP50.toFixed(0)} µs`);
      const rows: BenchRow[] = [
        {
          name: 'pg_append_vs_insert',
          value: insertP50 / appendP50,
          unit: 'x (INSERT p50 / append p50)',
          baseline: insertP50,
          ratio: insertP50 / appendP50,
          target: '>= 0.8',
          ok: insertP50 / appendP50 >= 0.8,
        },
        {
          name: 'pg_batch_append',
          value: perSecond,
          unit: 'entries/s (batches of 1000, durable)',
          baseline: null,
          ratio: null,
          target: '>= 50000',
          ok: perSecond >= 50_000,
        },
      ];
      rows.push(await gatewayRps(server, tmp, quick, log));
      return rows;
    } finally {
      await ledger.close();
      server.stop();
    }
  },
});
