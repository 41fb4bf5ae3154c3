import { randomBytes } from 'node:crypto';
import { sqliteLedgerStore } from '#kernel/ledger/store.js';
import type { KeyAdminPorts } from '#router/key-admin.js';
import type { OpenedRouter } from '#router/open.js';
import { revokeKeyPg } from '#router/pg/revocations.js';
import { revokeKey } from '#router/revocations.js';
import type { ConsoleData } from './console/data.js';

/**
 * The key inventory on the store this gateway's router writes: its SQLite root (the revocation file and ledger), or
 * the shared PostgreSQL chain and revocation table, which every host reads (so a key issued on one works on all).
 */
export function keyAdminPorts(root: string, opened: OpenedRouter, data: ConsoleData | null): KeyAdminPorts {
  const { clock, shared } = opened;
  const ledger = opened.ledger !== null ? sqliteLedgerStore(opened.ledger) : (shared?.chain ?? null);
  if (ledger === null) throw new Error('a router without a ledger has no key inventory');
  return {
    authKeys: opened.authKeys,
    clock,
    randomBytes,
    ledger,
    revoke: async (keyId, reason, effectiveAtMs) => {
      if (shared === null) return revokeKey(root, keyId, reason, clock, effectiveAtMs);
      const result = await revokeKeyPg(shared.chain.pool, shared.chain, keyId, reason, clock, effectiveAtMs);
      // This host refuses the key at once; the others within their refresh interval.
      const check = shared.revocations as { refresh?: () => Promise<void> };
      await check.refresh?.();
      return result;
    },
    lastUsed: (keyId) => opened.router.keyLastUsed(keyId),
    ...(data === null ? {} : { spend: async () => spendByScope(data) }),
  };
}

/** Each key budget scope's charge (reserved and settled), from the budget status the console reads. */
async function spendByScope(data: ConsoleData): Promise<Map<string, { tokens: number; cost: number }>> {
  const spend = new Map<string, { tokens: number; cost: number }>();
  for (const scope of (await data.budgets()).scopes)
    if (scope.scope === 'key')
      spend.set(scope.scope_id, {
        tokens: scope.reserved_tokens + scope.settled_tokens,
        cost: scope.reserved_cost + scope.settled_cost,
      });
  return spend;
}
