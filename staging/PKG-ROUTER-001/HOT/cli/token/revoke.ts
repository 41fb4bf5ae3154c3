import { CpError } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { tokenKeyId } from '../../router/auth.js';
import { revokeKey } from '../../router/revocations.js';

export default defineCommand({
  name: 'revoke',
  describe: 'revoke a key before it expires: every later authentication refuses it (recorded as KEY_REVOKED)',
  options: {
    ...rootOption('the cplane root whose revocation list to add to'),
    token: { type: 'string', describe: 'the token to revoke' },
    'key-id': { type: 'string', describe: 'the key id to revoke (claims.jti, or sha256:<hex> of a token without one)' },
    reason: { type: 'string', describe: 'why (recorded in the list and the ledger)' },
  },
  check(args) {
    if ((args.token === undefined) === (args.keyId === undefined))
      throw new CpError('ERR_USAGE', 'token revoke needs exactly one of --token TOKEN or --key-id ID', {
        hint: 'e.g. --key-id <claims.jti from token issue --json>',
      });
  },
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    let keyId = args.keyId;
    if (args.token !== undefined) {
      const fromToken = tokenKeyId(args.token);
      if (fromToken === null)
        throw new CpError('ERR_TOKEN_INVALID', '--token is not a cpt1 route token (the token itself is not shown)', {
          hint: 'pass the whole token as `token issue` printed it, or --key-id',
        });
      keyId = fromToken;
    }
    const result = revokeKey(root, keyId as string, args.reason ?? null);
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
