import { existsSync } from 'node:fs';
import { rootStoreUrl } from '#kernel/config/root-store.js';
import { CpError, show } from '#kernel/errors.js';
import { type Anchor, Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { breakerStatePath, readBreakerStates } from '../../router/open.js';
import { readSharedBreakers } from '../../router/pg/read-breakers.js';
import type { BreakerSnapshot } from '../../router/breaker.js';
import { rootPaths } from '#kernel/root/layout.js';

export default defineCommand({
  name: 'status',
  describe: 'circuit breaker states per provider/model and the ledger head',
  options: {
    ...rootOption('the root'),
    store: {
      type: 'string',
      describe:
        "read the ledger head and breakers in this PostgreSQL store (env: CPLANE_DATABASE_URL; config: gateway.store; none: the root's files)",
    },
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    if (!existsSync(rootPaths(root).hot)) {
      throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} is not a cplane root (no HOT/)`, {
        hint: 'bootstrap it first, or check --root',
        details: { root },
      });
    }
    const url = rootStoreUrl(root, ctx.env, args.store);
    const { head, breakers } = url === null ? localState(root) : await sharedState(url);
    const lines = [
      `ledger head${url === null ? '' : ' (postgres)'}: ${head ? `${head.seq}:${head.hash}` : 'no ledger yet'}`,
      breakers.length === 0 ? 'circuit breakers: none tripped yet (all CLOSED)' : 'circuit breakers:',
      ...breakers.map(
        (b) =>
          `  ${b.key}: ${b.state} (${b.consecutive_failures} consecutive failures${b.opened_at ? `, opened ${b.opened_at}` : ''})`,
      ),
    ];
    ctx.report(args, { ledger_head: head, store: url === null ? 'sqlite' : 'postgres', breakers }, lines);
    return EXIT.OK;
  },
});

interface State {
  head: Anchor | null;
  breakers: BreakerSnapshot[];
}

/** The root's own files: breakers.json and the SQLite ledger, read-only (status never writes, nor creates a ledger). */
function localState(root: string): State {
  const breakers = readBreakerStates(breakerStatePath(root));
  const path = ledgerPathForRoot(root);
  if (!existsSync(path)) return { head: null, breakers };
  const ledger = Ledger.open(path, { readonly: true });
  try {
    return { head: ledger.head(), breakers };
  } finally {
    ledger.close();
  }
}

/** The store the root's hosts share: its chain's head and the breaker states they publish. */
async function sharedState(url: string): Promise<State> {
  const ledger = await PgLedger.open(url, { poolSize: 1 });
  try {
    const head = await ledger.headAnchor();
    return { head: head.seq === 0 ? null : head, breakers: await readSharedBreakers(ledger.pool) };
  } finally {
    await ledger.close();
  }
}
