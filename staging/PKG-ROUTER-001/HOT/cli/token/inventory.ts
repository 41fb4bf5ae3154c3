import { randomBytes } from 'node:crypto';
import { configuredStoreUrl, explicitStoreUrl } from '#kernel/config/root-store.js';
import { Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import { sqliteLedgerStore } from '#kernel/ledger/store.js';
import type { CliContext } from '#cli/command.js';
import { resolveRoot } from '#cli/root-option.js';
import { loadRouterConfigForRoot } from '../../router/config.js';
import type { KeyAdminPorts } from '../../router/key-admin.js';
import { revokeKeyPg } from '../../router/pg/revocations.js';
import { revokeKey } from '../../router/revocations.js';
import { authKeysFor } from '../../router/secrets.js';

export const STORE_OPTION = {
  type: 'string',
  describe:
    'the PostgreSQL store gateway hosts share (postgres://user@host/db, no password; env: CPLANE_DATABASE_URL; config: gateway.store)',
} as const;

/**
 * The key inventory the CLI works on, as the gateway does: a store named outright (or the root's gateway.store), else
 * the root's SQLite ledger and revocation file. `use` runs with it open and it is closed after.
 */
export async function withInventory<T>(
  args: { root?: string | undefined; store?: string | undefined },
  ctx: CliContext,
  use: (ports: KeyAdminPorts) => Promise<T>,
): Promise<T> {
  const explicit = explicitStoreUrl(ctx.env, args.store);
  const root =
    explicit === undefined || args.root !== undefined || ctx.defaultRoot ? resolveRoot(args.root, ctx) : null;
  const store = explicit ?? (root === null ? null : configuredStoreUrl(root));
  const authKeys = authKeysFor(root, root === null ? undefined : loadRouterConfigForRoot(root).auth, ctx.env);
  const common = { authKeys, clock: Date.now, randomBytes };
  if (store !== null) {
    const ledger = await PgLedger.open(store);
    try {
      return await use({
        ...common,
        ledger,
        revoke: (keyId, reason, at) => revokeKeyPg(ledger.pool, ledger, keyId, reason, Date.now, at),
      });
    } finally {
      await ledger.close();
    }
  }
  const at = root as string;
  const ledger = Ledger.open(ledgerPathForRoot(at));
  try {
    return await use({
      ...common,
      ledger: sqliteLedgerStore(ledger),
      revoke: async (keyId, reason, when) => revokeKey(at, keyId, reason, Date.now, when),
    });
  } finally {
    ledger.close();
  }
}
