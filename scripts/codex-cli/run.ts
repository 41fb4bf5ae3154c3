// `npm run codex-cli`: the opt-in check that Codex CLI, unmodified, works through `cplane serve`'s Responses surface.
// Codex CLI (pinned by scripts/codex-cli/pin/package-lock.json, installed into build/peers/codex-cli, so not part of
// `npm test`) runs headless (`codex exec`) with a custom `model_providers` entry (`wire_api = "responses"`) whose
// base URL is the gateway and whose key is a cplane key; the gateway forwards to a local fake of the Responses API
// streaming as OpenAI documents it (response.created, response.output_item.added/done, response.completed with
// usage), which answers the task with a call of the CLI's own shell tool, then with text once the CLI sends the
// tool's output. The check: the CLI exits 0 with that answer, every generation is one EXCHANGE on openai.responses,
// the tool round trip is among them, nothing was refused, no key reached the ledger, and the chain verifies.
// `--translate`: the CLI asks for a Claude model instead, served by an Anthropic upstream (translate.ts).
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AgentCheck, fail, runAgentCheck } from '../lib/agent-check.js';
import { asJson, codexCli, type Json, shellCall } from './cli.js';
import { translateCheck } from './translate.js';

const UPSTREAM_KEY = 'sk-upstream-codex-cli-CHECK-0123456789';
const ANSWER = 'The directory holds notes.txt.';
const MODEL = 'gpt-5.1-codex';

/** The tool names a Responses request offers. */
function toolNames(body: Json): Set<string> {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  return new Set(tools.map((t) => String(t.name ?? asJson(t.function)?.name ?? '')));
}

const sse = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** One streamed Responses reply holding `item`, as the API streams it (platform.openai.com/docs/api-reference/responses-streaming). */
function streamed(n: number, item: Json): string {
  const base = { id: `resp_${n}`, object: 'response', created_at: 1_760_000_000, model: MODEL };
  const usage = {
    input_tokens: 120,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 12,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 132,
  };
  return [
    sse('response.created', { sequence_number: 0, response: { ...base, status: 'in_progress', output: [] } }),
    sse('response.output_item.added', {
      sequence_number: 1,
      output_index: 0,
      item: { ...item, status: 'in_progress' },
    }),
    sse('response.output_item.done', { sequence_number: 2, output_index: 0, item }),
    sse('response.completed', {
      sequence_number: 3,
      response: { ...base, status: 'completed', output: [item], usage },
    }),
  ].join('');
}

interface Fake {
  url: string;
  bodies: Json[];
  close(): Promise<void>;
}

/** The fake model: a turn carrying a tool's output gets the final text, a turn offering the shell tool a call of it. */
async function fakeResponses(): Promise<Fake> {
  const bodies: Json[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers.authorization !== `Bearer ${UPSTREAM_KEY}` || !req.url?.startsWith('/v1/responses')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
      bodies.push(body);
      const input = Array.isArray(body.input) ? (body.input as Json[]) : [];
      const answered = input.some((i) => i.type === 'function_call_output');
      const call = answered ? null : shellCall(toolNames(body));
      const item: Json =
        call === null
          ? {
              id: `msg_${bodies.length}`,
              type: 'message',
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', text: ANSWER, annotations: [] }],
            }
          : {
              id: `fc_${bodies.length}`,
              type: 'function_call',
              status: 'completed',
              call_id: `call_${bodies.length}`,
              name: call.name,
              arguments: JSON.stringify(call.args),
            };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': `req_codex_${bodies.length}` });
      res.end(streamed(bodies.length, item));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let upstream: Fake | null = null;
const check: AgentCheck = {
  ...codexCli(MODEL),
  async upstream(work) {
    writeFileSync(join(work.project, 'notes.txt'), 'cplane\n');
    const started = await fakeResponses();
    upstream = started;
    return {
      serveEnv: { OPENAI_BASE_URL: started.url, OPENAI_API_KEY: UPSTREAM_KEY },
      secrets: [UPSTREAM_KEY],
      describe: () => `${started.bodies.length} upstream requests`,
      close: () => started.close(),
    };
  },
  check(run, ledger) {
    const bodies = (upstream as Fake).bodies;
    if (!run.stdout.includes(ANSWER)) fail(`the answer is not the upstream's: ${run.stdout.slice(-2000)}`);
    const governed = ledger.exchanges.filter((e) => e.metadata.surface === 'openai.responses');
    if (governed.length === 0 || governed.length !== bodies.length)
      fail(`${bodies.length} generations reached the upstream, ${governed.length} EXCHANGEs recorded them`);
    const called = governed.filter((e) => e.metadata.finish_reason === 'tool_use');
    const returned = bodies.some((b) => JSON.stringify(b.input ?? []).includes('"function_call_output"'));
    if (called.length === 0 || !returned) fail('no tool round trip went through the gateway');
    if (governed.some((e) => e.metadata.usage_complete !== true)) fail('an EXCHANGE has incomplete usage');
    return `through the Responses surface; ${governed.length} EXCHANGEs (tool calls: ${called.length})`;
  },
};

const { values } = parseArgs({ options: { translate: { type: 'boolean', default: false } } });
process.exit(await runAgentCheck(values.translate ? translateCheck() : check));
