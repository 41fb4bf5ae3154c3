import { CpError } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { issueToken } from '../../router/auth.js';
import { authKeysFrom } from '../../router/open.js';

/** A year: a route token is a short-lived credential, and `exp` must stay a safe integer of seconds. */
const MAX_TTL_S = 366 * 24 * 3600;

export default defineCommand({
  name: 'issue',
  describe: 'issue a token and print it (--json: the token and its claims)',
  options: {
    agent: { type: 'string', demandOption: true, describe: 'the agent id the token is for' },
    scope: { type: 'string', array: true, default: ['route:*'], describe: 'scopes: route:* or route:<contract_id>' },
    ttl: { type: 'number', default: 3600, describe: `lifetime in seconds (1 to ${MAX_TTL_S})` },
  },
  handler(args, ctx) {
    const keys = authKeysFrom(ctx.env);
    if (!keys.default)
      throw new CpError('ERR_AUTH_NO_SECRET', 'no signing secret: $CPLANE_AUTH_SECRET is not set', {
        hint: 'export CPLANE_AUTH_SECRET=<a long random string> (the router verifies with the same secret)',
      });
    const ttl = intOption('ttl', args.ttl, 1, MAX_TTL_S);
    if (args.agent.length === 0)
      throw new CpError('ERR_USAGE', '--agent must not be empty', { hint: 'e.g. --agent AGENT-1' });
    const scopes = args.scope.map(String);
    if (scopes.length === 0 || scopes.some((s) => !/^route:(\*|[^\s]+)$/.test(s))) {
      throw new CpError('ERR_USAGE', `--scope takes route:* or route:<contract_id>, got ${JSON.stringify(scopes)}`, {
        hint: 'e.g. --scope route:*',
      });
    }
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: args.agent, scopes, iat: now, exp: now + ttl };
    const token = issueToken(claims, keys);
    ctx.report(args, { token, claims }, token);
    return EXIT.OK;
  },
});
