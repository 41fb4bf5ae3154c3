import { CpError } from '../../kernel/errors.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot } from '../root-option.js';
import { tokenKeyId } from '../../router/auth.js';
import { revokeKey } from '../../router/revocations.js';

interface RevokeArgs {
  root?: string;
  token?: string;
  'key-id'?: string;
  reason?: string;
}

export default defineCommand<RevokeArgs>({
  command: 'revoke',
  describe: 'revoke a key before it expires: every later authentication refuses it (recorded as KEY_REVOKED)',
  builder: (y) => y
    .option('root', { type: 'string', describe: 'the cplane root whose revocation list to add to' })
    .option('token', { type: 'string', describe: 'the token to revoke' })
    .option('key-id', {
      type: 'string', describe: 'the key id to revoke (claims.jti, or sha256:<hex> of a token without one)',
    })
    .option('reason', { type: 'string', describe: 'why (recorded in the list and the ledger)' })
    .conflicts('token', 'key-id')
    .check((argv) => {
      if (argv.token === undefined && argv['key-id'] === undefined) {
        throw new CpError('ERR_USAGE', 'token revoke needs --token TOKEN or --key-id ID', {
          hint: 'e.g. --key-id <claims.jti from token issue --json>',
        });
      }
      return true;
    }) as never,
  run(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    let keyId = args['key-id'] as string | undefined;
    if (args.token !== undefined) {
      const fromToken = tokenKeyId(args.token);
      if (fromToken === null) {
        throw new CpError('ERR_TOKEN_INVALID', '--token is not a cpt1 route token (the token itself is not shown)', {
          hint: 'pass the whole token as `token issue` printed it, or --key-id',
        });
      }
      keyId = fromToken;
    }
    const result = revokeKey(root, keyId as string, args.reason ?? null);
    const human = result.changed
      ? `revoked ${result.key_id} (${result.entry_id})`
      : `${result.key_id} was already revoked at ${result.revoked_at}`;
    ctx.report(args, result, human);
    return EXIT.OK;
  },
});
