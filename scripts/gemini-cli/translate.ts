// `npm run gemini-cli -- --translate`: Gemini CLI asks for a Claude model, and the gateway translates its Gemini
// requests into Anthropic Messages for the tests' local Anthropic upstream (test/gateway/upstream.ts: Anthropic's
// wire format, SSE streaming, tool use, usage with cache buckets), which answers a turn offering the CLI's own
// `list_directory` tool with a call of it, then with text once the CLI sends the tool's result. The check: the CLI
// exits 0 with that answer, every Messages call is one EXCHANGE on the Gemini surface the CLI used, with the
// upstream's usage bucket by bucket, the tool round trip is among them, nothing was refused (a field the
// translation cannot carry would be a PROMPT_REJECTED naming it), no key reached the ledger, and the chain verifies.
import type { ToolUse } from '../../test/gateway/upstream.js';
import type { AgentCheck } from '../lib/agent-check.js';
import {
  afterToolResult,
  streamedCall,
  TRANSLATED_MODEL as MODEL,
  TranslatedUpstream,
  UPSTREAM_ANSWER as ANSWER,
} from '../lib/translated-agent.js';
import { asJson, cliAnswered, geminiCli, type Json } from './cli.js';

const KEYS = { anthropic: 'sk-ant-upstream-gemini-cli-CHECK-0123456789', openai: 'sk-openai-unused-CHECK-0123456789' };

/**
 * The fake model's choice for one Messages request: text once the last turn carries a tool's result, else a call of
 * `list_directory` on the work directory when the request offers it, its required parameters filled.
 */
function listing(workdir: string): (body: Json) => ToolUse | null {
  return (body) => {
    if (afterToolResult(body)) return null;
    const tools = Array.isArray(body.tools) ? body.tools : [];
    const tool = tools.map(asJson).find((t) => t?.name === 'list_directory');
    if (tool === undefined || tool === null) return null;
    const required = asJson(tool.input_schema)?.required;
    const input: Json = {};
    for (const name of Array.isArray(required) && required.length > 0 ? (required as string[]) : ['dir_path'])
      input[name] = workdir;
    return streamedCall('list_directory', input);
  };
}

/** The translated check: the CLI's Gemini requests for a Claude model, served by an Anthropic upstream. */
export function translateCheck(): AgentCheck {
  const upstream = new TranslatedUpstream(KEYS, listing);
  return {
    // The CLI as installed: its requests for a model it does not know carry `thinkingConfig: {includeThoughts: true}`.
    ...geminiCli(MODEL),
    upstream: (work) => upstream.start(work),
    check(run, ledger) {
      const response = cliAnswered(run, ANSWER);
      const served = upstream.check(ledger, ['gemini.generate', 'gemini.stream']);
      return `${JSON.stringify(response).slice(0, 120)} from ${MODEL} through Anthropic Messages; ${served}`;
    },
  };
}
