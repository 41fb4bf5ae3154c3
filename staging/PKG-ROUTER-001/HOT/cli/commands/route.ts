import { warningText } from '#kernel/catalogue/define.js';
import { rootStoreUrl } from '#kernel/config/root-store.js';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { defineCommand, EXIT, type CliContext } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { openRouter } from '../../router/open.js';
import type { PromptResponse } from '../../router/response.js';

/** prompt-request.schema.json's bound on max_tokens. */
const MAX_OUTPUT_TOKENS = 1_000_000;

export default defineCommand({
  name: 'route',
  describe: 'send one prompt through the installed router and print the response and the exchange id',
  options: {
    ...rootOption('the root whose router, providers and ledger to use'),
    prompt: { type: 'string', describe: 'the prompt text' },
    compiled: {
      type: 'string',
      describe: 'a compiled prompt JSON file (from `cplane prompt compile --format anthropic --json`)',
    },
    provider: {
      type: 'string',
      default: 'mock',
      describe:
        'the id of an installed provider package (mock, anthropic, openai, gemini, …; `cplane list` shows the packages)',
    },
    model: { type: 'string', describe: 'model id (default from HOT/config/router.json)' },
    session: { type: 'string', default: 'SES-CLI', describe: 'session id' },
    agent: { type: 'string', default: 'AGENT-CLI', describe: 'agent id' },
    contract: { type: 'string', default: 'PRC-CLI', describe: 'prompt contract id' },
    'work-order': { type: 'string', describe: 'work order id' },
    'max-tokens': { type: 'number', describe: `maximum output tokens (1 to ${MAX_OUTPUT_TOKENS})` },
    token: { type: 'string', describe: 'auth token (cpt1…; see `cplane token issue`)' },
    dev: { type: 'boolean', default: false, describe: 'dev mode: skip auth' },
    store: {
      type: 'string',
      describe:
        'a postgres:// URL: record the exchange in this shared store instead of the SQLite ledger (env: CPLANE_DATABASE_URL; config: gateway.store)',
    },
  },
  check(args) {
    if ((args.prompt === undefined) === (args.compiled === undefined))
      throw new CpError('ERR_USAGE', 'give exactly one of --prompt or --compiled', {
        hint: 'cplane route --root R --prompt "…"',
      });
  },
  async handler(args, ctx) {
    const maxTokens = intOption('max-tokens', args.maxTokens, 1, MAX_OUTPUT_TOKENS);
    const root = resolveRoot(args.root, ctx);
    const compiled = args.compiled === undefined ? undefined : readCompiled(args.compiled);
    // The same store `cplane serve` would use on this root: a route on a PostgreSQL root lands in its shared chain.
    const store = rootStoreUrl(root, ctx.env, args.store);
    const opened = await openRouter(root, { provider: args.provider, devMode: args.dev, env: ctx.env, store });
    for (const w of opened.warnings) ctx.err(`cplane: warning: ${warningText(w)}`);
    let response: PromptResponse;
    try {
      response = await opened.router.route({
        prompt: args.prompt ?? compiled?.prompt ?? '',
        contract_id: args.contract,
        agent_id: args.agent,
        session_id: args.session,
        provider_id: args.provider,
        ...(args.model ? { model_id: args.model } : {}),
        ...(args.workOrder ? { work_order_id: args.workOrder } : {}),
        ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
        ...(args.token ? { auth_token: args.token } : {}),
        ...(compiled ? { compiled: { stable_prefix_hash: compiled.stable_prefix_hash, body: compiled.body } } : {}),
      });
    } catch (error) {
      await opened.close();
      throw error;
    }
    // Closing saves breaker state: after an answer, its failure is a warning, never the answer's loss.
    response.warnings.push(...(await opened.close()));
    if (response.unrecorded_exchange) throw unrecorded(response, args.json === true, ctx);
    const human =
      response.outcome === 'success'
        ? [
            response.content,
            `— ${response.outcome}; exchange ${response.exchange_entry_id}; ${response.input_tokens} in / ${response.output_tokens} out; ${response.latency_ms} ms`,
          ]
        : [
            `${response.outcome}: ${response.error_code ?? ''} ${response.error_message ?? ''}`.trim(),
            `— entry ${response.exchange_entry_id}`,
          ];
    ctx.report(args, response, [...human, ...response.warnings.map((w) => `warning: ${warningText(w)}`)]);
    return response.outcome === 'success' ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});

/**
 * The exchange was neither committed nor spooled: the error output carries all of it. With --json the
 * error's details hold the whole response (the answer) and the records; without, the answer is printed as
 * usual and the error (on stderr) holds the records as JSON.
 */
function unrecorded(response: PromptResponse, json: boolean, ctx: CliContext): CpError {
  const { unrecorded_exchange: records, ...rest } = response;
  if (!json && response.outcome === 'success')
    ctx.report({ json: false }, rest, [
      response.content,
      ...response.warnings.map((w) => `warning: ${warningText(w)}`),
    ]);
  return new CpError(
    'ERR_ROUTE_EXCHANGE_UNRECORDED',
    `the ${response.outcome === 'success' ? 'answer was received' : 'call ended'} but its EXCHANGE could be neither appended to the ledger nor spooled (${response.warnings
      .filter((w) => w.code === 'EXCHANGE_NOT_RECORDED')
      .map(warningText)
      .join('; ')}); the whole exchange: ${JSON.stringify(records)}`,
    {
      hint: 'free disk space (or fix the ledger) and append these records by hand: nothing else holds them',
      details: { response: rest, exchange: records ?? [] },
    },
  );
}

function readCompiled(path: string): { prompt: string; stable_prefix_hash: string; body: Record<string, unknown> } {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(
      readTextBounded(path, { maxBytes: READ_LIMITS.promptFile, what: 'the compiled prompt' }),
    ) as Record<string, unknown>;
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError('ERR_USAGE', `cannot read compiled prompt ${show(path)}`, {
      hint: 'pass the JSON printed by `cplane prompt compile --format anthropic --json`',
      cause,
    });
  }
  const body = value.body;
  const messages = Array.isArray(value.messages) ? (value.messages as Array<{ content?: unknown }>) : [];
  const tail = messages[messages.length - 1]?.content;
  if (typeof value.stable_prefix_hash !== 'string' || typeof body !== 'object' || body === null || tail === undefined) {
    throw new CpError('ERR_USAGE', `${show(path)} is not a compiled prompt with a request body`, {
      hint: 'compile with a provider --format so the body is included',
    });
  }
  // The EXCHANGE records what was asked this turn (the dynamic tail); the stable prefix is named by its hash.
  return {
    prompt: typeof tail === 'string' ? tail : JSON.stringify(tail),
    stable_prefix_hash: value.stable_prefix_hash,
    body: body as Record<string, unknown>,
  };
}
