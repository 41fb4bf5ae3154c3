import { CpError } from '../../kernel/errors.js';
import { defineCommand } from '../command.js';
import { issueToken } from '../../router/auth.js';
import { authKeysFrom } from '../../router/open.js';

export default defineCommand({
  command: 'token',
  describe: 'issue an HMAC-signed, expiring, scoped route token (key from $CPLANE_AUTH_SECRET)',
  builder: (y) => y
    .command('issue', 'issue a token', (c) => c)
    .demandCommand(1, 'name a subcommand: issue')
    .option('agent', { type: 'string', demandOption: true, describe: 'the agent id the token is for' })
    .option('scope', { type: 'string', array: true, default: ['route:*'], describe: 'scopes: route:* or route:<contract_id>' })
    .option('ttl', { type: 'number', default: 3600, describe: 'lifetime in seconds' }),
  run(args, ctx) {
    const keys = authKeysFrom(ctx.env);
    if (!keys.default) throw new CpError('ERR_AUTH_NO_SECRET', 'no signing secret: $CPLANE_AUTH_SECRET is not set', { hint: 'export CPLANE_AUTH_SECRET=<a long random string> (the router verifies with the same secret)' });
    if (!Number.isInteger(args.ttl) || args.ttl <= 0) throw new CpError('ERR_USAGE', `--ttl must be a positive whole number of seconds, got ${args.ttl}`, { hint: 'e.g. --ttl 3600' });
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: args.agent, scopes: args.scope.map(String), iat: now, exp: now + args.ttl };
    const token = issueToken(claims, keys);
    ctx.report(args, { token, claims }, token);
    return 0;
  },
});
