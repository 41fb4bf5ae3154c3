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
    const facts = await linkFacts(ctx);
    const errors: Finding[] = [];
    for (const exchange of facts.unlinked) {
      errors.push({
        code: 'EXCHANGE_WITHOUT_DISPATCH',
        message: `EXCHANGE ${exchange.id} links to ${JSON.stringify(exchange.link)}, which is not a DISPATCH`,
      });
    }
    const warnings: Finding[] = [];
    const spoolDir = join(ctx.root, LAYOUT.spool);
    const spooled = new Set(spoolEntries(spoolDir, { claimed: true }).map((name) => name.slice(0, -'.json'.length)));
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
    for (const dispatch of facts.unanswered) {
      if (spooled.has(dispatch.id)) continue;
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
      `${facts.exchanges} exchanges linked to their dispatches${pending ? `; ${pending} in flight` : ''}`,
      warnings,
    );
  },
});

/** What G6 judges: how many EXCHANGEs, those that link to no DISPATCH, and the DISPATCHes no EXCHANGE links to. */
interface LinkFacts {
  exchanges: number;
  unlinked: { id: string; link: unknown }[];
  unanswered: { id: string; timestamp: string }[];
}

// An EXCHANGE answers a DISPATCH when its metadata.dispatch_entry_id is that DISPATCH's id as a JSON string (the
// generated column holds any JSON value as text, so the type is checked too).
const LINKED = "json_type(e.metadata, '$.dispatch_entry_id') = 'text'";
const UNLINKED_SQL = `SELECT e.id, e.metadata FROM entries AS e WHERE e.event_type = 'EXCHANGE'
  AND NOT (${LINKED} AND EXISTS (SELECT 1 FROM entries AS d WHERE d.id = e.dispatch_entry_id AND d.event_type = 'DISPATCH'))
  ORDER BY e.seq`;
const UNANSWERED_SQL = `SELECT d.id, d.timestamp FROM entries AS d WHERE d.event_type = 'DISPATCH'
  AND NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.dispatch_entry_id = d.id AND e.event_type = 'EXCHANGE' AND ${LINKED})
  ORDER BY d.seq`;

/**
 * The links of the root's chain, from the store in use. On SQLite the database answers with the problem rows only
 * (through the id and dispatch-link indexes), so the gate's memory does not grow with the ledger; it never reads
 * an exchange's content either.
 */
async function linkFacts(ctx: GateContext): Promise<LinkFacts> {
  const pg = pgLedgerOf(ctx);
  if (pg !== null) return factsOf(await pgDispatchRecords(await pg));
  const ledger = ledgerOf(ctx);
  const unlinked = (ledger.statement(UNLINKED_SQL).raw().all() as [string, string][]).map(([id, metadata]) => ({
    id,
    link: (JSON.parse(metadata) as { dispatch_entry_id?: unknown }).dispatch_entry_id,
  }));
  const unanswered = (ledger.statement(UNANSWERED_SQL).raw().all() as [string, string][]).map(([id, timestamp]) => ({
    id,
    timestamp,
  }));
  const exchanges = ledger
    .statement("SELECT count(*) FROM entries WHERE event_type = 'EXCHANGE'")
    .pluck()
    .get() as number;
  return { exchanges, unlinked, unanswered };
}

/** The same facts from every DISPATCH and EXCHANGE in chain order (PostgreSQL). */
function factsOf(records: readonly DispatchRecord[]): LinkFacts {
  const dispatches = records.filter((r) => r.event_type === 'DISPATCH');
  const dispatchIds = new Set(dispatches.map((d) => d.id));
  const answered = new Set<string>();
  const unlinked: LinkFacts['unlinked'] = [];
  let exchanges = 0;
  for (const record of records) {
    if (record.event_type !== 'EXCHANGE') continue;
    exchanges += 1;
    if (typeof record.link === 'string' && dispatchIds.has(record.link)) answered.add(record.link);
    else unlinked.push({ id: record.id, link: record.link });
  }
  return {
    exchanges,
    unlinked,
    unanswered: dispatches.filter((d) => !answered.has(d.id)).map((d) => ({ id: d.id, timestamp: d.timestamp })),
  };
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}
