// `npm run claude-code -- --fallback`: Claude Code through a routing alias whose primary upstream answers 529
// overloaded for a while (from the moment Claude Code starts) and whose secondary answers. The gateway's routing
// (docs/routing.md) moves each call to the secondary, so Claude Code, unchanged, keeps working. The check, beyond
// the plain run's: each of Claude Code's requests is one EXCHANGE; while the primary is overloaded it lists the
// primary's 529 attempt then the secondary's answer and names the secondary as who served; afterwards the primary
// serves alone; at least one request fell back; neither upstream key reached the ledger.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Fault, startUpstream, type ToolUse, type Upstream } from '../../test/gateway/upstream.js';
import { type AgentCheck, type AgentLedger, fail } from '../lib/agent-check.js';
import { cplaneCli } from '../lib/served-root.js';
import { CLAUDE_CODE, claudeAnswered, claudeSummary } from './agent.js';

const PRIMARY_KEY = 'sk-ant-upstream-PRIMARY-0123456789';
const SECONDARY_KEY = 'sk-ant-upstream-SECONDARY-0123456789';
/** The models Claude Code asks for (its main model and its small fast one): each an alias over both upstreams. */
const MODELS = ['claude-sonnet-4-5', 'claude-haiku-4-5'];

/** Anthropic's answer when it is overloaded (docs.anthropic.com/en/api/errors: HTTP 529, `overloaded_error`). */
const OVERLOADED: Fault = {
  status: 529,
  body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
};

interface Attempt {
  deployment?: string;
  outcome?: string;
  status?: number | null;
  kind?: string;
}

const deployment = (id: string, url: string, env: string, model: string) => ({
  id,
  provider: 'anthropic',
  base_url: url,
  credential_env: env,
  model,
});

/** The routing section: per model, a primary deployment and a secondary one, falling back on the default classes. */
function routing(primary: string, secondary: string): unknown {
  const name = (m: string): string => m.replace(/^claude-/, '');
  return {
    deployments: MODELS.flatMap((m) => [
      deployment(`primary-${name(m)}`, primary, 'CC_PRIMARY_KEY', m),
      deployment(`secondary-${name(m)}`, secondary, 'CC_SECONDARY_KEY', m),
    ]),
    aliases: Object.fromEntries(MODELS.map((m) => [m, { targets: [`primary-${name(m)}`, `secondary-${name(m)}`] }])),
  };
}

/**
 * Whether an EXCHANGE has the shape of a fallback (the primary's 529, then the secondary's answer) or of the primary
 * serving alone once its overload ended; anything else fails the check.
 */
function shapeOf(e: AgentLedger['exchanges'][number]): 'fallback' | 'primary' {
  const attempts = (e.metadata.attempts ?? []) as Attempt[];
  const seen = JSON.stringify({ attempts, served_by: e.metadata.served_by, model_alias: e.metadata.model_alias });
  const [first, second] = attempts;
  if (
    attempts.length === 2 &&
    first?.deployment?.startsWith('primary-') &&
    first.status === 529 &&
    first.kind === 'overloaded' &&
    second?.deployment?.startsWith('secondary-') &&
    second.outcome === 'success' &&
    String(e.metadata.served_by).startsWith(`${second.deployment}/`)
  )
    return 'fallback';
  if (attempts.length === 1 && first?.deployment?.startsWith('primary-') && first.outcome === 'success')
    return 'primary';
  return fail(`an EXCHANGE is neither a fallback from the primary's 529 nor the primary's answer: ${seen}`);
}

/** The fake model's choice: a call of Claude Code's `Read` on `file` while the request offers it and no result came. */
function readFirst(file: string): (body: Record<string, unknown>) => ToolUse | null {
  return (body) => {
    const messages = Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : [];
    const content = messages.at(-1)?.content;
    if (Array.isArray(content) && content.some((c) => (c as { type?: unknown })?.type === 'tool_result')) return null;
    const tools = Array.isArray(body.tools) ? (body.tools as { name?: unknown }[]) : [];
    if (!tools.some((t) => t?.name === 'Read')) return null;
    const input = { file_path: file };
    const json = JSON.stringify(input);
    return { name: 'Read', input, pieces: [json.slice(0, 5), json.slice(5)] };
  };
}

/**
 * The fallback run of `agent` (Claude Code; a stand-in in the runner's own test): the primary answers 529 for
 * `overloadedMs` from the agent's start. The primary's breaker threshold is set out of reach, so every request of the
 * window tries the primary first and its EXCHANGE lists both attempts (with the default threshold the breaker opens
 * after three 529s and later requests go straight to the secondary: one attempt each).
 */
export function fallbackCheck(
  overloadedMs: number,
  agent: Omit<AgentCheck, 'upstream' | 'check'> = CLAUDE_CODE,
): AgentCheck {
  let primary: Upstream | null = null;
  let secondary: Upstream | null = null;
  let overloadedUntil = Number.POSITIVE_INFINITY;
  let overloaded = 0;
  const messages = (u: Upstream | null): number => (u?.requests ?? []).filter((r) => r.path === '/v1/messages').length;
  return {
    ...agent,
    async upstream(work) {
      [primary, secondary] = await Promise.all([
        startUpstream({ anthropic: PRIMARY_KEY, openai: 'unused-openai-key-primary' }),
        startUpstream({ anthropic: SECONDARY_KEY, openai: 'unused-openai-key-secondary' }),
      ]);
      primary.standing = () => {
        if (Date.now() >= overloadedUntil) return undefined;
        overloaded += 1;
        return OVERLOADED;
      };
      const [p, s] = [primary, secondary];
      // A task of more than one request: Claude Code is asked to Read a file first, so its requests span the window.
      const notes = join(work.project, 'notes.txt');
      writeFileSync(notes, 'cplane\n');
      p.toolUse = s.toolUse = readFirst(notes);
      return {
        // A model that is no alias goes to the family's upstream: the secondary (the check then names it).
        serveEnv: {
          ANTHROPIC_BASE_URL: s.url,
          ANTHROPIC_API_KEY: SECONDARY_KEY,
          CC_PRIMARY_KEY: PRIMARY_KEY,
          CC_SECONDARY_KEY: SECONDARY_KEY,
        },
        secrets: [PRIMARY_KEY, SECONDARY_KEY],
        describe: () =>
          `primary: ${p.requests.length} requests, ${overloaded} answered 529; secondary: ${s.requests.length} requests`,
        close: async () => {
          await Promise.all([p.close(), s.close()]);
        },
      };
    },
    configure(root) {
      const route = routing((primary as Upstream).url, (secondary as Upstream).url);
      cplaneCli(['config', 'set', 'gateway.routing', JSON.stringify(route), '--root', root]);
      const breaker = { failure_threshold: 1_000_000, reset_timeout_ms: 30_000, half_open_probes: 1 };
      cplaneCli(['config', 'set', 'router.breaker', JSON.stringify(breaker), '--root', root]);
    },
    invocation(work, gateway) {
      overloadedUntil = Date.now() + overloadedMs;
      return agent.invocation(work, gateway);
    },
    check(run, ledger) {
      // Every request answered once: by the secondary after the primary's 529, or by the primary after the window.
      const answered = messages(secondary) + messages(primary) - overloaded;
      const { answer, messages: exchanges } = claudeAnswered(run, ledger, answered);
      const shapes = exchanges.map(shapeOf);
      const fellBack = shapes.filter((s) => s === 'fallback').length;
      if (fellBack === 0)
        fail(`no request fell back (the primary answered 529 to none): is ${overloadedMs} ms too short?`);
      if (fellBack !== overloaded)
        fail(`the primary answered 529 ${overloaded} times, ${fellBack} EXCHANGEs record a fallback from it`);
      return `${claudeSummary(answer, ledger, exchanges)}; ${fellBack} fell back from the primary's 529 to the secondary`;
    },
  };
}
