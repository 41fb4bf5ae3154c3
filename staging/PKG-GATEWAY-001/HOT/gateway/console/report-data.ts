import { existsSync } from 'node:fs';
import { CpError, show } from '#kernel/errors.js';
import { Ledger, ledgerPathForRoot, type SessionSummary, turnChars } from '#kernel/ledger/index.js';
import { PgLedger, storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { type BudgetStatus, loadBudgetConfigForRoot } from '#budgeter/index.js';
import { PgBudgeter } from '#budgeter/pg/pg-budgeter.js';
import { breakerStatePath, readBreakerStates } from '#router/open.js';
import { readSharedBreakers } from '#router/pg/read-breakers.js';
import type { ConsoleData, ConsoleTurn } from './data.js';
import { PgConsoleData } from './pg-data.js';
import { SqliteConsoleData } from './sqlite-data.js';

/** The console's reads over one store, and what to close once the report is written (or failed). */
export interface ReportSource {
  data: ConsoleData;
  close(): Promise<void>;
}

/**
 * The turns' text one report embeds in all. Past it the remaining sessions' turns are left out and `turns_cut` says
 * how many of each were kept: a client's turns may each be as large as the gateway's body limit, and one session of
 * them would otherwise make a page past what one string (the file) can hold, so no report could be written at all.
 */
export const MAX_REPORT_TEXT_CHARS = 64 * 1024 * 1024;

/**
 * Every view of the console as `cplane report --html` embeds it, from either store: the newest `sessions`
 * sessions, the first `turns` turns of each, and the root (verified now), budgets, breakers and plots.
 */
export async function reportData(
  view: ConsoleData,
  limits: { sessions: number; turns: number },
): Promise<Record<string, unknown>> {
  const sessions: SessionSummary[] = [];
  let before: number | undefined;
  while (sessions.length < limits.sessions) {
    const page = await view.sessions({
      limit: Math.min(200, limits.sessions - sessions.length),
      ...(before === undefined ? {} : { before }),
    });
    sessions.push(...page.sessions);
    if (page.next_before === null) break;
    before = page.next_before;
  }
  // Keyed by the client's own session ids: no prototype, so "__proto__" is a session like any other.
  const turns = Object.create(null) as Record<string, ConsoleTurn[]>;
  const cut = Object.create(null) as Record<string, number>;
  let text = 0;
  for (const s of sessions) {
    const list: ConsoleTurn[] = [];
    let after: number | undefined;
    while (list.length < limits.turns) {
      // Here the session has turns not yet read: its first, or those after a page that named a next one.
      if (text >= MAX_REPORT_TEXT_CHARS) {
        cut[s.session_id] = list.length;
        break;
      }
      const page = await view.session(s.session_id, {
        limit: Math.min(200, limits.turns - list.length),
        ...(after === undefined ? {} : { after }),
      });
      for (const turn of page.turns) text += turnChars(turn);
      list.push(...page.turns);
      if (page.next_after === null) break;
      after = page.next_after;
    }
    turns[s.session_id] = list;
  }
  return {
    generated_at: new Date().toISOString(),
    root: await view.rootView({ verify: true }),
    sessions,
    turns,
    turns_cut: cut,
    budgets: await view.budgets(),
    breakers: await view.breakers(),
    alerts: await view.alerts(),
    plots: await view.plots(),
  };
}

/** The root's own SQLite ledger and budget file, read-only; breakers from its breakers.json. */
export function openSqliteReport(root: string): ReportSource {
  const path = ledgerPathForRoot(root);
  if (!existsSync(path)) {
    throw new CpError('ERR_REPORT_OUTPUT', `${show(root)} has no ledger yet: there is nothing to report`, {
      hint: 'run some calls through the root first (cplane serve, cplane route)',
      details: { root, ledger: path },
    });
  }
  const ledger = Ledger.open(path, { readonly: true });
  return {
    data: new SqliteConsoleData({ root, ledger, breakers: () => readBreakerStates(breakerStatePath(root)) }),
    close: async () => ledger.close(),
  };
}

/**
 * The store the root's hosts share, as a gateway's console reads it: the chain through PgLedger, the budgets
 * through PgBudgeter (on the same one-connection pool), the breakers as the hosts last published them in
 * cplane_breakers. Nothing is laid out and nothing polls: a report is one pass, and closing ends the pool.
 */
export async function openPgReport(root: string, url: string): Promise<ReportSource> {
  const ledger = await PgLedger.open(url, { poolSize: 1 });
  try {
    const budget = await sharedBudget(root, ledger);
    // Read once: the report is a snapshot, and a gateway's SharedBreakers (which would poll) is not wanted here.
    const breakers = await readSharedBreakers(ledger.pool);
    return {
      data: new PgConsoleData({ root, ledger, budget, breakers: () => breakers }),
      close: () => ledger.close(),
    };
  } catch (error) {
    await ledger.close();
    throw error;
  }
}

/**
 * The shared budgets; a store that holds a chain but no budget tables (nothing was ever charged there) has no
 * usage, as a root without a budget file has none on SQLite: opening never lays the tables out.
 */
async function sharedBudget(
  root: string,
  ledger: PgLedger,
): Promise<{ status(options: { limit?: number }): Promise<BudgetStatus> }> {
  let present: boolean;
  try {
    const r = await ledger.pool.query("SELECT to_regclass('cplane_budget_meta') IS NOT NULL AS present");
    present = (r.rows[0] as { present?: boolean } | undefined)?.present === true;
  } catch (error) {
    throw storeError(error);
  }
  const config = loadBudgetConfigForRoot(root);
  if (present) return PgBudgeter.open(ledger.pool, { config });
  return {
    status: async () => ({
      mode: config.mode,
      currency: config.currency,
      db_path: 'postgres',
      session_id: null,
      pending_reservations: 0,
      scopes: [],
    }),
  };
}
