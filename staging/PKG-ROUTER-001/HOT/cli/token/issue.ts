import { randomBytes } from 'node:crypto';
import { CpError, show } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { resolveRoot } from '#cli/root-option.js';
import { BUDGET_SCOPE, drawKeyId, issueToken, OPERATOR_SCOPES, type TokenClaims } from '../../router/auth.js';
import { loadRouterConfigForRoot } from '../../router/config.js';
import { authKeysFor } from '../../router/secrets.js';
import { MAX_TTL_S, SCOPE } from '../../router/key-admin.js';
import { keyIssuedRecord } from '../../router/key-records.js';
import { explicitStoreUrl } from '#kernel/config/root-store.js';
import { STORE_OPTION, withInventory } from './inventory.js';

export default defineCommand({
  name: 'issue',
  describe: 'issue a token and print it (--json: the token and its claims; claims.jti names it for revocation)',
  options: {
    agent: { type: 'string', demandOption: true, describe: 'the agent id the token is for' },
    scope: {
      type: 'string',
      array: true,
      default: ['route:*'],
      describe:
        'route:* | route:<contract_id> | model:* | model:<model_id> | console:read | metrics:read | keys:admin (route:* is added when neither a route nor an operator scope is named; an operator key routes nothing)',
    },
    'budget-scope': { type: 'string', describe: "the budget scope the key's calls are charged to" },
    ttl: { type: 'number', default: 3600, describe: `lifetime in seconds (1 to ${MAX_TTL_S})` },
    root: {
      type: 'string',
      describe:
        "sign with the root's configured auth secret (router.auth), not $CPLANE_AUTH_SECRET, and record the key in its inventory (KEY_ISSUED)",
    },
    store: { ...STORE_OPTION, describe: `record the key in this store's inventory: ${STORE_OPTION.describe}` },
  },
  async handler(args, ctx) {
    const root = typeof args.root === 'string' || ctx.defaultRoot ? resolveRoot(args.root, ctx) : null;
    const keys = authKeysFor(root, root === null ? undefined : loadRouterConfigForRoot(root).auth, ctx.env);
    if (!keys.default) {
      const what = "no signing secret: $CPLANE_AUTH_SECRET is not set (nor router.auth in the root's config)";
      throw new CpError('ERR_AUTH_NO_SECRET', what, {
        hint: 'export CPLANE_AUTH_SECRET=<a long random string> (the router verifies with the same secret)',
      });
    }
    const ttl = intOption('ttl', args.ttl, 1, MAX_TTL_S);
    if (args.agent.length === 0)
      throw new CpError('ERR_USAGE', '--agent must not be empty', { hint: 'e.g. --agent AGENT-1' });
    const given = args.scope.map(String);
    if (given.length === 0 || given.some((s) => !SCOPE.test(s))) {
      const what = `--scope takes route:* | route:<contract_id> | model:* | model:<model_id> | console:read | metrics:read | keys:admin, got ${show(given)}`;
      throw new CpError('ERR_USAGE', what, { hint: 'e.g. --scope route:* --scope model:claude-sonnet-4-6' });
    }
    const scopes = given.some((s) => s.startsWith('route:') || OPERATOR_SCOPES.includes(s))
      ? given
      : ['route:*', ...given];
    const budgetScope = args.budgetScope;
    if (budgetScope !== undefined && !BUDGET_SCOPE.test(budgetScope)) {
      const what = `--budget-scope must be 1 to 200 printable ASCII characters without spaces, got ${show(budgetScope)}`;
      throw new CpError('ERR_USAGE', what, { hint: 'e.g. --budget-scope team-a' });
    }
    const now = Math.floor(Date.now() / 1000);
    const claims: TokenClaims = {
      sub: args.agent,
      scopes,
      iat: now,
      exp: now + ttl,
      jti: drawKeyId(randomBytes),
      ...(budgetScope === undefined ? {} : { budget_scope: budgetScope }),
    };
    const token = issueToken(claims, keys);
    // With a root (or a store), the key joins the inventory the key admin API lists; the record never holds the token.
    let entryId: string | null = null;
    if (root !== null || explicitStoreUrl(ctx.env, args.store) !== undefined)
      entryId = await withInventory(args, ctx, async (ports) => {
        const [entry] = await ports.ledger.appendBatch([keyIssuedRecord(claims, null)]);
        return entry?.id ?? null;
      });
    ctx.report(args, { token, claims, entry_id: entryId }, token);
    return EXIT.OK;
  },
});
