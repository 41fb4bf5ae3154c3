import { warningText } from '#kernel/catalogue/define.js';
import { rootStoreUrl } from '#kernel/config/root-store.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { DEFAULT_DURABILITY, parseDurability } from '#router/durability.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { formatLog } from '../../gateway/log.js';
import { openGateway } from '../../gateway/open.js';
import { loadGatewayConfig } from '../../gateway/settings.js';

const MAX_BODY_BYTES = 256 * 1024 * 1024;
const MAX_DRAIN_MS = 10 * 60 * 1000;

export default defineCommand({
  name: 'serve',
  describe:
    "run the governed HTTP gateway (Anthropic and OpenAI APIs) on the root until SIGTERM/SIGINT; settings come from the root's `gateway` config, a flag wins",
  options: {
    ...rootOption('the root whose router, providers, budget and ledger to use'),
    host: { type: 'string', describe: 'address to listen on (config: gateway.host)' },
    port: { type: 'number', describe: 'port to listen on, 0 for any free port (config: gateway.port)' },
    'json-log': { type: 'boolean', default: false, describe: 'log one JSON line per request' },
    'body-limit': {
      type: 'number',
      describe: `largest request body in bytes, 1 to ${MAX_BODY_BYTES} (config: gateway.body_limit_bytes)`,
    },
    store: {
      type: 'string',
      describe:
        'a postgres:// URL (no password: PGPASSWORD or .pgpass) for a ledger, budgets and breakers shared by several hosts (env: CPLANE_DATABASE_URL; config: gateway.store)',
    },
    durability: {
      type: 'string',
      describe:
        "full (default: the DISPATCH durable before the upstream is called, the EXCHANGE before the answer is released), exchange (one fsync per call, the EXCHANGE's) or relaxed (none) (config: router.durability)",
    },
    'drain-timeout': {
      type: 'number',
      describe: `ms to let calls in flight finish on shutdown, 0 to ${MAX_DRAIN_MS} (config: gateway.drain_timeout_ms)`,
    },
  },
  async handler(args, ctx) {
    const port = intOption('port', args.port, 0, 65535);
    const bodyLimit = intOption('body-limit', args.bodyLimit, 1, MAX_BODY_BYTES);
    const drainTimeout = intOption('drain-timeout', args.drainTimeout, 0, MAX_DRAIN_MS);
    const durability = args.durability === undefined ? undefined : parseDurability(args.durability, '--durability');
    const root = resolveRoot(args.root, ctx);
    const json = args.jsonLog === true;
    const config = loadGatewayConfig(root);
    const store = rootStoreUrl(root, ctx.env, args.store);
    const settings = {
      ...config,
      ...(args.host === undefined ? {} : { host: args.host }),
      ...(port === undefined ? {} : { port }),
      ...(bodyLimit === undefined ? {} : { body_limit_bytes: bodyLimit }),
      ...(drainTimeout === undefined ? {} : { drain_timeout_ms: drainTimeout }),
      ...(store === null ? {} : { store }),
      ...(durability === undefined ? {} : { durability }),
    };
    const served = await openGateway(
      root,
      ctx.env,
      settings,
      (entry) => ctx.out(formatLog(entry, json)),
      (w) => ctx.err(`cplane serve: warning: ${warningText(w)}`),
    );
    for (const line of served.unavailable) ctx.err(`cplane serve: warning: ${line}`);
    for (const w of served.opened.warnings) ctx.err(`cplane serve: warning: ${warningText(w)}`);
    const signal = new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    let address: Awaited<ReturnType<typeof served.gateway.listen>>;
    try {
      address = await served.gateway.listen(settings.host, settings.port);
    } catch (error) {
      await served.close();
      throw error;
    }
    const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    ctx.err(json ? JSON.stringify({ event: 'listening', url }) : `cplane serve: listening on ${url}`);
    const received = await signal;
    const drained = await served.gateway.drain();
    const { groups, batches } = served.opened.router.groupCommit.stats;
    const durable = served.opened.durableCommits();
    const problems = await served.close();
    for (const problem of problems) ctx.err(`cplane serve: warning: ${warningText(problem)}`);
    ctx.err(
      `cplane serve: ${received}: drained (${drained.finished} finished, ${drained.cancelled} cancelled); ` +
        `${batches} record batches in ${groups} ledger transactions, ${durable} durable commits (durability ${served.opened.router.config.durability ?? DEFAULT_DURABILITY}); ledger closed`,
    );
    return EXIT.OK;
  },
});
