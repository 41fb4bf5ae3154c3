// `npm run codex-cli -- --translate`: Codex CLI asks for a Claude model through the gateway's Responses surface, and
// the gateway translates its Responses requests into Anthropic Messages for the tests' local Anthropic upstream
// (test/gateway/upstream.ts: Anthropic's wire format, SSE streaming, tool use, usage with cache buckets), which
// answers a turn offering the CLI's shell tool with a call of it, then with text once the CLI sends the tool's output.
// The check: the CLI exits 0 with that answer, every Messages call is one EXCHANGE on the Responses surface with the
// upstream's usage bucket by bucket, the tool round trip is among them, nothing was refused (a field the translation
// cannot carry would be a PROMPT_REJECTED naming it), no key reached the ledger, and the chain verifies.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startUpstream, type ToolUse, USAGE, type Upstream } from '../../test/gateway/upstream.js';
import { type AgentCheck, fail } from '../lib/agent-check.js';
import { asJson, codexCli, type Json, shellCall } from './cli.js';

const KEYS = { anthropic: 'sk-ant-upstream-codex-cli-CHECK-0123456789', openai: 'sk-openai-unused-CHECK-0123456789' };
const MODEL = 'claude-sonnet-4-5';
const ANSWER = 'Hello from upstream';

/** The fake model's choice for one Messages request: text once the last turn carries a tool's result, else the shell. */
function shellTurn(body: Json): ToolUse | null {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const content = messages.at(-1)?.content;
  if (Array.isArray(content) && content.some((c) => asJson(c)?.type === 'tool_result')) return null;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const call = shellCall(new Set(tools.map((t) => String(asJson(t)?.name ?? ''))));
  if (call === null) return null;
  const json = JSON.stringify(call.args);
  const half = Math.floor(json.length / 2);
  return { name: call.name, input: call.args, pieces: [json.slice(0, half), json.slice(half)] };
}

/** The translated check: the CLI's Responses requests for a Claude model, served by an Anthropic upstream. */
export function translateCheck(): AgentCheck {
  let upstream: Upstream | null = null;
  return {
    // OpenAI's hosted web search and the sub-agent tools (a `namespace` tool) run on OpenAI's side only: a request
    // offering them is refused by name (tools[i].type), so the CLI is configured not to offer them.
    ...codexCli(MODEL, ['web_search = "disabled"', '', '[agents]', 'enabled = false']),
    async upstream(work) {
      writeFileSync(join(work.project, 'notes.txt'), 'cplane\n');
      const started = await startUpstream(KEYS);
      started.toolUse = shellTurn;
      upstream = started;
      return {
        serveEnv: { ANTHROPIC_BASE_URL: started.url, ANTHROPIC_API_KEY: KEYS.anthropic },
        secrets: [KEYS.anthropic],
        describe: () =>
          `${started.requests.length} upstream requests: ${[...new Set(started.requests.map((r) => r.path))].join(' ')}`,
        close: () => started.close(),
      };
    },
    check(run, ledger) {
      const seen = (upstream as Upstream).requests.filter((r) => r.path === '/v1/messages');
      if (!run.stdout.includes(ANSWER)) fail(`the answer is not the upstream's: ${run.stdout.slice(-2000)}`);
      const governed = ledger.exchanges.filter((e) => e.metadata.surface === 'openai.responses');
      if (governed.length === 0 || governed.length !== seen.length)
        fail(`${seen.length} Messages calls reached the upstream, ${governed.length} EXCHANGEs recorded them`);
      const prompt = USAGE.input + USAGE.cacheWrite + USAGE.cacheRead;
      const want = ['anthropic.messages', MODEL, prompt, USAGE.cacheRead, USAGE.cacheWrite, USAGE.output, true];
      for (const e of governed) {
        const m = e.metadata;
        const got = [
          m.upstream_surface,
          m.model_id,
          m.input_tokens,
          m.cache_read_tokens,
          m.cache_write_tokens,
          m.output_tokens,
          m.usage_complete,
        ];
        if (JSON.stringify(got) !== JSON.stringify(want))
          fail(`an EXCHANGE is not the upstream's Messages call with its usage: ${JSON.stringify(m)}`);
      }
      const called = governed.filter((e) => e.metadata.finish_reason === 'tool_use');
      // The tool's output, as the CLI ran it in the work directory, went back to the model.
      const answered = seen.some((s) => {
        const messages = JSON.stringify(s.body?.messages ?? []);
        return messages.includes('"tool_result"') && messages.includes('notes.txt');
      });
      if (called.length === 0 || !answered) fail('no tool round trip went through the gateway');
      const streamed = governed.filter((e) => e.metadata.stream === true).length;
      return (
        `${ANSWER} from ${MODEL} through Anthropic Messages; ` +
        `${ledger.exchanges.length} EXCHANGEs (${governed.length} generations, streamed: ${streamed}, tool calls: ${called.length})`
      );
    },
  };
}
