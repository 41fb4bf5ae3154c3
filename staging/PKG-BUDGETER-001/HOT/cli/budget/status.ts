import { existsSync } from 'node:fs';
import { rootStoreUrl } from '#kernel/config/root-store.js';
import { Budgeter, budgetDbPathForRoot, loadBudgetConfigForRoot } from '../../budgeter/index.js';
import type { BudgetStatus, ScopeStatus } from '../../budgeter/index.js';
import { PgBudgeter } from '../../budgeter/pg/pg-budgeter.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption, MAX_LIST_LIMIT } from '#cli/option-values.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';

/** Settled and reserved spend apart: reserved is what calls in flight (or orphaned) hold, settled is spent. */
function scopeLine(s: ScopeStatus, currency: string): string {
  const indent = s.scope === 'session' ? '' : s.scope === 'work_order' ? '  ' : '    ';
  const tokenLimit = s.limit?.max_tokens === undefined ? '' : ` / ${s.limit.max_tokens}`;
  const costLimit = s.limit?.max_cost === undefined ? '' : ` / ${s.limit.max_cost}`;
  const unknown = s.unknown_cost_requests > 0 ? ` (+${s.unknown_cost_requests} of unknown cost)` : '';
  const pct = s.used_fraction === null ? '' : ` ${(s.used_fraction * 100).toFixed(1)}%`;
  const money = (n: number): string => n.toFixed(6);
  const period = s.period === null ? '' : ` (${s.period.every} ${s.period.start} to ${s.period.end})`;
  return (
    `${indent}${s.scope} ${s.scope_id}${period}: ${s.requests} req, tokens ${s.settled_tokens} settled + ${s.reserved_tokens} reserved` +
    ` = ${s.settled_tokens + s.reserved_tokens}${tokenLimit}, cost ${currency} ${money(s.settled_cost)} settled + ${money(s.reserved_cost)} reserved` +
    ` = ${money(s.settled_cost + s.reserved_cost)}${costLimit}${unknown} [${s.state}${pct}]`
  );
}

function humanStatus(status: BudgetStatus): string[] {
  const head =
    `budget ${status.db_path} mode=${status.mode}` +
    (status.session_id === null ? '' : ` session=${status.session_id}`) +
    ` pending=${status.pending_reservations}`;
  if (status.scopes.length === 0)
    return [head, status.session_id === null ? 'no sessions yet' : 'no usage for this session'];
  return [head, ...status.scopes.map((s) => scopeLine(s, status.currency))];
}

export default defineCommand({
  name: 'status',
  describe: 'every session, or one session with its work orders and agents (exit 1 when a budget is exhausted)',
  options: {
    ...rootOption('the cplane root'),
    session: { type: 'string', describe: 'show one session in detail' },
    limit: { type: 'number', default: 100, describe: 'most sessions to list' },
    store: {
      type: 'string',
      describe:
        "read the budget in this PostgreSQL store (env: CPLANE_DATABASE_URL; config: gateway.store; none: the root's SQLite file)",
    },
  },
  async handler(args, ctx) {
    const limit = intOption('limit', args.limit, 1, MAX_LIST_LIMIT);
    const root = resolveRoot(args.root, ctx);
    const url = rootStoreUrl(root, ctx.env, args.store);
    if (url !== null) {
      // The budget every host shares: the root's SQLite file stopped counting when it moved there.
      const budgeter = await PgBudgeter.open(url, { config: loadBudgetConfigForRoot(root), poolSize: 1 });
      try {
        const status = await budgeter.status({ session_id: args.session, limit }, url);
        ctx.report(args, status, humanStatus(status));
        return status.scopes.some((s) => s.state === 'exhausted') ? EXIT.CHECK_FAILED : EXIT.OK;
      } finally {
        await budgeter.close();
      }
    }
    if (!existsSync(budgetDbPathForRoot(root))) {
      // Status never creates state: a root nobody has spent in yet simply has no usage.
      const config = loadBudgetConfigForRoot(root);
      const empty: BudgetStatus = {
        mode: config.mode,
        currency: config.currency,
        db_path: budgetDbPathForRoot(root),
        session_id: args.session ?? null,
        pending_reservations: 0,
        scopes: [],
      };
      ctx.report(args, empty, humanStatus(empty));
      return EXIT.OK;
    }
    const budgeter = Budgeter.open({ root, readonly: true });
    try {
      const status = budgeter.status({ session_id: args.session, limit });
      ctx.report(args, status, humanStatus(status));
      return status.scopes.some((s) => s.state === 'exhausted') ? EXIT.CHECK_FAILED : EXIT.OK;
    } finally {
      budgeter.close();
    }
  },
});
