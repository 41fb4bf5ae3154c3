import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CpError } from '../../kernel/errors.js';
import { importFound } from '../../kernel/loader/discover.js';
import { DEFAULT_ORPHAN_TIMEOUT_MS, listOrphans, type Ledger, type LedgerEntry } from '../../kernel/ledger/index.js';
import { pgOrphans } from '../../kernel/ledger/pg/pg-checks.js';
import { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { type CliContext, defineCommand, EXIT, type ExitCode } from '../command.js';
import { resolveRoot } from '../root-option.js';
import { entryLine, LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

/** What the budgeter package provides for --reconcile; the kernel finds it in the running code's HOT, never imports it. */
interface Reconciler {
  reconcileRoot(
    root: string,
    ledger: Ledger,
    options: { timeoutMs: number },
  ): { request_id: string; dispatch_entry_id: string | null; reason: string }[];
}

/** The same on a shared store (PostgreSQL); null: another host's pass was under way. */
interface StoreReconciler {
  reconcileStore(
    root: string,
    url: string,
    options: { timeoutMs: number },
  ): Promise<{ request_id: string; dispatch_entry_id: string | null; reason: string }[] | null>;
}

const RECONCILER = join('budgeter', 'reconcile.js');
const STORE_RECONCILER = join('budgeter', 'pg', 'reconcile-pg.js');

async function loadReconciler<T>(hot: string, file: string): Promise<T | null> {
  const path = join(hot, file);
  return existsSync(path) ? ((await importFound(path)) as T) : null;
}

async function storeOrphans(url: string, timeoutMs: number): Promise<LedgerEntry[]> {
  const store = await PgLedger.open(url, { poolSize: 1 });
  try {
    return await pgOrphans(store, { timeoutMs });
  } finally {
    await store.close();
  }
}

export default defineCommand({
  name: 'orphans',
  describe: 'DISPATCH markers that no EXCHANGE links to after the timeout (sends lost in a crash)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    'timeout-ms': {
      type: 'number',
      default: DEFAULT_ORPHAN_TIMEOUT_MS,
      describe: 'how long a DISPATCH may wait for its EXCHANGE',
    },
    store: {
      type: 'string',
      conflicts: ['ledger'],
      describe:
        "the chain and budgets in this PostgreSQL store instead (postgres://user@host/db, no password); with --reconcile, the root's budget config",
    },
    reconcile: {
      type: 'boolean',
      default: false,
      describe:
        'charge the budget reservations of calls pending beyond the timeout as unknown usage (kept charged), recorded in the ledger',
    },
  },
  async handler(args, ctx) {
    // Only an explicit --store, as `ledger head`: the root's SQLite file is still a ledger of its own.
    if (args.store !== undefined) return reconcileOnStore(args, ctx, args.store);
    if (!args.reconcile) {
      const orphans = withLedger(args, ctx, { readonly: true }, (ledger) =>
        listOrphans(ledger, { timeoutMs: args.timeoutMs }),
      );
      ctx.report(args, orphans, orphans.length === 0 ? 'no orphaned dispatches' : orphans.map(entryLine));
      return EXIT.OK;
    }
    if (typeof args.ledger === 'string') {
      throw new CpError('ERR_USAGE', "--reconcile needs --root: the budget to reconcile is the root's", {
        hint: 'pass --root R instead of --ledger FILE',
      });
    }
    const root = resolveRoot(args.root, ctx);
    const reconciler = await loadReconciler<Reconciler>(ctx.hot, RECONCILER);
    const result = withLedger(args, ctx, {}, (ledger) => {
      const orphans = listOrphans(ledger, { timeoutMs: args.timeoutMs });
      return {
        orphans,
        reconciled: reconciler ? reconciler.reconcileRoot(root, ledger, { timeoutMs: args.timeoutMs }) : [],
      };
    });
    const lines = [
      ...(result.orphans.length === 0 ? ['no orphaned dispatches'] : result.orphans.map(entryLine)),
      reconciler
        ? `reconciled ${result.reconciled.length} pending reservation(s)`
        : 'no budgeter installed: no reservations to reconcile',
      ...result.reconciled.map((r) => `  ${r.request_id}  ${r.dispatch_entry_id ?? '-'}  ${r.reason}`),
    ];
    ctx.report(args, result, lines);
    return EXIT.OK;
  },
});

async function reconcileOnStore(
  args: { reconcile: boolean; timeoutMs: number; root?: string | undefined; json?: boolean | undefined },
  ctx: CliContext,
  url: string,
): Promise<ExitCode> {
  const orphans = await storeOrphans(url, args.timeoutMs);
  const orphanLines = orphans.length === 0 ? ['no orphaned dispatches'] : orphans.map(entryLine);
  if (!args.reconcile) {
    ctx.report(args, orphans, orphanLines);
    return EXIT.OK;
  }
  const root = resolveRoot(args.root, ctx);
  const reconciler = await loadReconciler<StoreReconciler>(ctx.hot, STORE_RECONCILER);
  const reconciled = reconciler ? await reconciler.reconcileStore(root, url, { timeoutMs: args.timeoutMs }) : [];
  const result = { orphans, reconciled: reconciled ?? [], busy: reconciled === null };
  ctx.report(args, result, [
    ...orphanLines,
    reconciler === null
      ? 'no budgeter installed: no reservations to reconcile'
      : reconciled === null
        ? 'another host is reconciling this store right now: nothing done here (run it again to see what is left)'
        : `reconciled ${reconciled.length} pending reservation(s)`,
    ...result.reconciled.map((r) => `  ${r.request_id}  ${r.dispatch_entry_id ?? '-'}  ${r.reason}`),
  ]);
  return EXIT.OK;
}
