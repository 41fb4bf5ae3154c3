import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MAX_CLOCK_SKEW_MS } from '#kernel/ledger/index.js';
import { type DispatchRecord, pgDispatchRecords } from '#kernel/ledger/pg/pg-checks.js';
import { LAYOUT } from '#kernel/root/layout.js';
import { spoolEntries } from '#router/spool.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import type { GateContext } from '../gate.js';
import { ledgerOf, pgLedgerOf } from '../root-state.js';

/**
 * G6: no DISPATCH is left without its EXCHANGE beyond the orphan timeout or dated in the future; every EXCHANGE
 * links to a DISPATCH. The router's spool is part of the answer: an exchange spooled and not yet appended is WARN (it is in
 * the root and the next router start appends it; its DISPATCH is not an orphan), while a quarantined spool
 * entry is FAIL: it may hold a paid exchange the ledger does not have, and only a person can recover it.
 * Entries are only listed, never opened (they may be links or FIFOs). On a root whose store is PostgreSQL the
 * dispatches and exchanges are those of the chain there; the spool is still this host's.
 */
export default defineGate({
  id: 'G6',
  name: 'EXCHANGES',
  describe: 'no DISPATCH without its EXCHANGE beyond the orphan timeout; every EXCHANGE links to a DISPATCH',
  async run(ctx) {
    const records = await dispatchRecords(ctx);
    const exchanges = records.filter((r) => r.event_type === 'EXCHANGE');
    const dispatches = records.filter((r) => r.event_type === 'DISPATCH');
    const dispatchIds = new Set(dispatches.map((d) => d.id));
    const errors: Finding[] = [];
    const answered = new Set<string>();
    for (const exchange of exchanges) {
      const link = exchange.link;
      if (typeof link !== 'string' || !dispatchIds.has(link)) {
        errors.push({
          code: 'EXCHANGE_WITHOUT_DISPATCH',
          message: `EXCHANGE ${exchange.id} links to ${JSON.stringify(link)}, which is not a DISPATCH`,
        });
      } else {
        answered.add(link);
      }
    }
    const warnings: Finding[] = [];
    const spoolDir = join(ctx.root, LAYOUT.spool);
    const spooled = new Set(spoolEntries(spoolDir).map((name) => name.slice(0, -'.json'.length)));
    for (const id of spooled) {
      warnings.push({
        code: 'SPOOL_PENDING',
        path: join(LAYOUT.spool, `${id}.json`),
        message: `the EXCHANGE of DISPATCH ${JSON.stringify(id)} is spooled, not yet in the ledger; the next router start appends it`,
      });
    }
    for (const name of listDir(join(ctx.root, LAYOUT.spoolQuarantine))) {
      errors.push({
        code: 'SPOOL_QUARANTINED',
        path: join(LAYOUT.spoolQuarantine, name),
        message: `spool entry ${JSON.stringify(name)} was quarantined (unreadable or refused by the ledger); its exchange may be missing from the ledger`,
      });
    }
    const now = ctx.now();
    const cutoff = now - ctx.orphanTimeoutMs;
    // A DISPATCH dated in the future never ages into an orphan: it is reported instead of counted as in flight.
    const future = now + DEFAULT_MAX_CLOCK_SKEW_MS;
    let pending = 0;
    for (const dispatch of dispatches) {
      if (answered.has(dispatch.id) || spooled.has(dispatch.id)) continue;
      const at = Date.parse(dispatch.timestamp);
      if (at > future) {
        errors.push({
          code: 'FUTURE_DATED_DISPATCH',
          message: `DISPATCH ${dispatch.id} is dated ${dispatch.timestamp}, in the future of the checker's clock: it can never be seen as orphaned`,
        });
      } else if (at <= cutoff) {
        errors.push({
          code: 'ORPHAN_DISPATCH',
          message: `DISPATCH ${dispatch.id} (${dispatch.timestamp}) has no EXCHANGE after ${ctx.orphanTimeoutMs} ms`,
        });
      } else {
        pending += 1;
      }
    }
    return verdict(
      this,
      errors,
      `${exchanges.length} exchanges linked to their dispatches${pending ? `; ${pending} in flight` : ''}`,
      warnings,
    );
  },
});

/** Every DISPATCH and EXCHANGE of the root's chain in chain order, from the store in use. */
async function dispatchRecords(ctx: GateContext): Promise<DispatchRecord[]> {
  const pg = pgLedgerOf(ctx);
  if (pg !== null) return pgDispatchRecords(await pg);
  // The rows' own columns and metadata only: a query would read every exchange's prompt and response from the
  // content store, which for a coding agent's ledger is gigabytes the gate never looks at.
  const rows = ledgerOf(ctx)
    .statement(
      "SELECT id, event_type, timestamp, metadata FROM entries WHERE event_type IN ('DISPATCH', 'EXCHANGE') ORDER BY seq",
    )
    .raw()
    .iterate() as IterableIterator<[string, DispatchRecord['event_type'], string, string]>;
  const records: DispatchRecord[] = [];
  for (const [id, eventType, timestamp, metadata] of rows)
    records.push({
      id,
      event_type: eventType,
      timestamp,
      link: (JSON.parse(metadata) as { dispatch_entry_id?: unknown }).dispatch_entry_id,
    });
  return records;
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}
