// `npm run codex-cli -- --translate`: Codex CLI asks for a Claude model through the gateway's Responses surface, and
// the gateway translates its Responses requests into Anthropic Messages for the tests' local Anthropic upstream
// (test/gateway/upstream.ts: Anthropic's wire format, SSE streaming, tool use, usage with cache buckets), which
// answers a turn offering the CLI's shell tool with a call of it, then with text once the CLI sends the tool's output.
// The check: the CLI exits 0 with that answer, every Messages call is one EXCHANGE on the Responses surface with the
// upstream's usage bucket by bucket, the tool round trip is among them, nothing was refused (a field the translation
// cannot carry would be a PROMPT_REJECTED naming it), no key reached the ledger, and the chain verifies.
import type { ToolUse } from '../../test/gateway/upstream.js';
import { type AgentCheck, fail } from '../lib/agent-check.js';
import {
  afterToolResult,
  streamedCall,
  TRANSLATED_MODEL as MODEL,
  TranslatedUpstream,
  UPSTREAM_ANSWER as ANSWER,
} from '../lib/translated-agent.js';
import { asJson, codexCli, type Json, shellCall } from './cli.js';

const KEYS = { anthropic: 'sk-ant-upstream-codex-cli-CHECK-0123456789', openai: 'sk-openai-unused-CHECK-0123456789' };

/** The fake model's choice for one Messages request: text once the last turn carries a tool's result, else the shell. */
function shellTurn(body: Json): ToolUse | null {
  if (afterToolResult(body)) return null;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const call = shellCall(new Set(tools.map((t) => String(asJson(t)?.name ?? ''))));
  return call === null ? null : streamedCall(call.name, call.args);
}

/** The translated check: the CLI's Responses requests for a Claude model, served by an Anthropic upstream. */
export function translateCheck(): AgentCheck {
  const upstream = new TranslatedUpstream(KEYS, () => shellTurn);
  return {
    // OpenAI's hosted web search and the sub-agent tools (a `namespace` tool) run on OpenAI's side only: a request
    // offering them is refused by name (tools[i].type), so the CLI is configured not to offer them.
    ...codexCli(MODEL, ['web_search = "disabled"', '', '[agents]', 'enabled = false']),
    upstream: (work) => upstream.start(work),
    check(run, ledger) {
      if (!run.stdout.includes(ANSWER)) fail(`the answer is not the upstream's: ${run.stdout.slice(-2000)}`);
      return `${ANSWER} from ${MODEL} through Anthropic Messages; ${upstream.check(ledger, ['openai.responses'])}`;
    },
  };
}
