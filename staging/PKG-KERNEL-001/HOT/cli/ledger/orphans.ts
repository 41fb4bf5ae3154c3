import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CpError } from '../../kernel/errors.js';
import { DEFAULT_ORPHAN_TIMEOUT_MS, listOrphans, type Ledger } from '../../kernel/ledger/index.js';
import { defineCommand, EXIT } from '../command.js';
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

const RECONCILER = join('budgeter', 'reconcile.js');

async function loadReconciler(hot: string): Promise<Reconciler | null> {
  const path = join(hot, RECONCILER);
  return existsSync(path) ? ((await import(pathToFileURL(path).href)) as Reconciler) : null;
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
    reconcile: {
      type: 'boolean',
      default: false,
      describe:
        'charge the budget reservations of calls pending beyond the timeout as unknown usage (kept charged), recorded in the ledger',
    },
  },
  async handler(args, ctx) {
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
    const reconciler = await loadReconciler(ctx.hot);
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
