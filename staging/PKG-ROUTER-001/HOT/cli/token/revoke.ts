import { configuredStoreUrl, explicitStoreUrl } from '#kernel/config/root-store.js';
import { CpError } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { tokenKeyId } from '../../router/auth.js';
import { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import { revokeKey, type RevokeResult } from '../../router/revocations.js';
import { revokeKeyPg } from '../../router/pg/revocations.js';

export default defineCommand({
  name: 'revoke',
  describe: 'revoke a key before it expires: every later authentication refuses it (recorded as KEY_REVOKED)',
  options: {
    ...rootOption('the cplane root whose revocation list to add to'),
    token: { type: 'string', describe: 'the token to revoke' },
    'key-id': { type: 'string', describe: 'the key id to revoke (claims.jti, or sha256:<hex> of a token without one)' },
    reason: { type: 'string', describe: 'why (recorded in the list and the ledger)' },
    store: {
      type: 'string',
      describe:
        'revoke on the PostgreSQL store gateway hosts share (postgres://user@host/db, no password; env: CPLANE_DATABASE_URL; config: gateway.store): every host refuses the key within its refresh interval',
    },
  },
  check(args) {
    if ((args.token === undefined) === (args.keyId === undefined))
      throw new CpError('ERR_USAGE', 'token revoke needs exactly one of --token TOKEN or --key-id ID', {
        hint: 'e.g. --key-id <claims.jti from token issue --json>',
      });
  },
  async handler(args, ctx) {
    let keyId = args.keyId;
    if (args.token !== undefined) {
      const fromToken = tokenKeyId(args.token);
      if (fromToken === null)
        throw new CpError('ERR_TOKEN_INVALID', '--token is not a cpt1 route token (the token itself is not shown)', {
          hint: 'pass the whole token as `token issue` printed it, or --key-id',
        });
      keyId = fromToken;
    }
    // A store named outright needs no root; otherwise the root's own gateway.store decides (rootStoreUrl's order).
    const explicit = explicitStoreUrl(ctx.env, args.store);
    const root = explicit === undefined ? resolveRoot(args.root, ctx) : null;
    const store = explicit ?? (root === null ? null : configuredStoreUrl(root));
    let result: RevokeResult;
    if (store === null) result = revokeKey(root as string, keyId as string, args.reason ?? null);
    else {
      const ledger = await PgLedger.open(store);
      try {
        result = await revokeKeyPg(ledger.pool, ledger, keyId as string, args.reason ?? null);
      } finally {
        await ledger.close();
      }
    }
    ctx.report(
      args,
      result,
      result.changed
        ? `revoked ${result.key_id} (${result.entry_id})`
        : `${result.key_id} was already revoked at ${result.revoked_at}`,
    );
    return EXIT.OK;
  },
});
