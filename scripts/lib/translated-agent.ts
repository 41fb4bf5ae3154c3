// What the agent checks that go through translation (`npm run gemini-cli -- --translate`, `npm run codex-cli --
// --translate`) share: the tests' local Anthropic upstream, whose fake model calls the CLI's tool then answers, and
// the checks of what it served: every Messages call one EXCHANGE on the CLI's surface with the upstream's usage
// bucket by bucket, and the tool round trip among them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startUpstream, type ToolUse, USAGE, type Upstream } from '../../test/gateway/upstream.js';
import { type AgentLedger, type AgentUpstream, type AgentWork, fail } from './agent-check.js';

/** The Claude model the CLIs ask for, and what the upstream answers once the tool's result came back. */
export const TRANSLATED_MODEL = 'claude-sonnet-4-5';
export const UPSTREAM_ANSWER = 'Hello from upstream';

type Body = Record<string, unknown>;

/** Whether a Messages request's last turn carries a tool's result (the fake model then answers with text). */
export function afterToolResult(body: Body): boolean {
  const messages = Array.isArray(body.messages) ? (body.messages as Body[]) : [];
  const content = messages.at(-1)?.content;
  return Array.isArray(content) && content.some((c) => (c as Body | null)?.type === 'tool_result');
}

/** A tool call's input as the upstream streams it: in two pieces. */
export function streamedCall(name: string, input: Body): ToolUse {
  const json = JSON.stringify(input);
  const half = Math.floor(json.length / 2);
  return { name, input, pieces: [json.slice(0, half), json.slice(half)] };
}

/** The local Anthropic upstream of a translated check; `turn` is its fake model's choice in the work directory. */
export class TranslatedUpstream {
  private started: Upstream | null = null;

  constructor(
    private readonly keys: { anthropic: string; openai: string },
    private readonly turn: (project: string) => (body: Body) => ToolUse | null,
  ) {}

  async start(work: AgentWork): Promise<AgentUpstream> {
    writeFileSync(join(work.project, 'notes.txt'), 'cplane\n');
    const started = await startUpstream(this.keys);
    started.toolUse = this.turn(work.project);
    this.started = started;
    return {
      serveEnv: { ANTHROPIC_BASE_URL: started.url, ANTHROPIC_API_KEY: this.keys.anthropic },
      secrets: [this.keys.anthropic],
      describe: () =>
        `${started.requests.length} upstream requests: ${[...new Set(started.requests.map((r) => r.path))].join(' ')}`,
      close: () => started.close(),
    };
  }

  /**
   * The EXCHANGEs on the CLI's `surfaces` are the upstream's Messages calls, one each, with its usage bucket by
   * bucket, and a tool call whose result went back is among them; returns what was served, counted.
   */
  check(ledger: AgentLedger, surfaces: readonly string[]): string {
    const seen = (this.started as Upstream).requests.filter((r) => r.path === '/v1/messages');
    const governed = ledger.exchanges.filter((e) => surfaces.includes(String(e.metadata.surface)));
    if (governed.length === 0 || governed.length !== seen.length)
      fail(`${seen.length} Messages calls reached the upstream, ${governed.length} EXCHANGEs recorded them`);
    const prompt = USAGE.input + USAGE.cacheWrite + USAGE.cacheRead;
    const want = [
      'anthropic.messages',
      TRANSLATED_MODEL,
      prompt,
      USAGE.cacheRead,
      USAGE.cacheWrite,
      USAGE.output,
      true,
    ];
    for (const { metadata: m } of governed) {
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
    // The tool's result, as the CLI ran it in the work directory, went back to the model.
    const answered = seen.some((s) => {
      const messages = JSON.stringify(s.body?.messages ?? []);
      return messages.includes('"tool_result"') && messages.includes('notes.txt');
    });
    if (called.length === 0 || !answered) fail('no tool round trip went through the gateway');
    const streamed = governed.filter((e) => e.metadata.stream === true).length;
    return `${ledger.exchanges.length} EXCHANGEs (${governed.length} generations, streamed: ${streamed}, tool calls: ${called.length})`;
  }
}
