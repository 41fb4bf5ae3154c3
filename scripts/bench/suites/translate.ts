// translate_overhead_p50: an Anthropic client asking for a gpt model (its request translated to Chat Completions,
// the reply back to a Message) against an OpenAI client asking for it as is (passed through), the same upstream
// reply, the same in-process gateway, interleaved calls. The ratio of the two medians is held to 1.2. The same for a
// Responses API client asking for a Claude model (translated to Messages) against an Anthropic client asking for it,
// and for an Anthropic client asking for a Responses-only model (o3-pro, translated to the Responses API) against a
// Responses client asking for it as is.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { frames as anthropicFrames, message as anthropicMessage } from '../peers/anthropic-reply.js';
import { inProcessGateway } from '../peers/in-process-gateway.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';

const usage = {
  prompt_tokens: 20,
  completion_tokens: 5,
  total_tokens: 25,
  prompt_tokens_details: { cached_tokens: 0 },
};
const completion = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4.1-mini',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Hi', refusal: null }, finish_reason: 'stop', logprobs: null },
  ],
  usage,
});
const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4.1-mini', choices, ...extra })}\n\n`;
const chunks = [
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
  chunk([{ index: 0, delta: { content: 'Hi' }, finish_reason: null }]),
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
  chunk([], { usage }),
  'data: [DONE]\n\n',
];

const responsesUsage = {
  input_tokens: 20,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 25,
};
const part = { type: 'output_text', text: 'Hi', annotations: [] };
const item = { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [part] };
const responseObject = (status: string, output: unknown[]) => ({
  id: 'resp_1',
  object: 'response',
  created_at: 1,
  status,
  error: null,
  incomplete_details: null,
  model: 'o3-pro-2025-06-10',
  output,
  usage: status === 'completed' ? responsesUsage : null,
});
const response = JSON.stringify(responseObject('completed', [item]));
const at = { item_id: 'msg_1', output_index: 0, content_index: 0 };
const responseEvents = [
  { type: 'response.created', response: responseObject('in_progress', []) },
  { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
  { type: 'response.content_part.added', ...at, part: { ...part, text: '' } },
  { type: 'response.output_text.delta', ...at, delta: 'Hi' },
  { type: 'response.output_text.done', ...at, text: 'Hi' },
  { type: 'response.content_part.done', ...at, part },
  { type: 'response.output_item.done', output_index: 0, item },
  { type: 'response.completed', response: responseObject('completed', [item]) },
].map((e, n) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: n })}\n\n`);

/** A Chat Completions, Messages and Responses upstream: one reply of each, whole or streamed, whoever asks. */
function upstream(): Promise<Server> {
  const server = createServer((req, res) => {
    const read: Buffer[] = [];
    req.on('data', (c: Buffer) => read.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(read).toString('utf8')) as { stream?: boolean };
      const messages = req.url?.startsWith('/v1/messages') === true;
      const responses = req.url?.startsWith('/v1/responses') === true;
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const c of messages ? anthropicFrames : responses ? responseEvents : chunks) res.write(c);
        res.end();
      } else {
        const reply = messages ? anthropicMessage : responses ? response : completion;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(reply)) });
        res.end(reply);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const MESSAGES = [{ role: 'user', content: 'Hello' }];

/**
 * Who asks: a client of each API for the gpt model, a Responses and an Anthropic client for the Claude one, and an
 * Anthropic and a Responses client for o3-pro (served only by the Responses API).
 */
type Client = 'anthropic' | 'openai' | 'gemini' | 'responses' | 'claude' | 'to-responses' | 'o3-pro-direct';

/** The request a client of each API sends for the same question (Gemini names the model and streaming in its path). */
function request(
  client: Client,
  key: string,
  stream: boolean,
): { path: string; headers: Record<string, string>; body: unknown } {
  const json = { 'content-type': 'application/json' };
  if (client === 'responses' || client === 'o3-pro-direct')
    return {
      path: '/v1/responses',
      headers: { ...json, authorization: `Bearer ${key}` },
      body: {
        model: client === 'responses' ? 'claude-sonnet-4-5' : 'o3-pro',
        max_output_tokens: 64,
        stream,
        input: MESSAGES,
      },
    };
  if (client === 'gemini')
    return {
      path: `/v1beta/models/gpt-4.1-mini:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      headers: { ...json, 'x-goog-api-key': key },
      body: { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { maxOutputTokens: 64 } },
    };
  const anthropic = client === 'anthropic' || client === 'claude' || client === 'to-responses';
  return {
    path: `/v1/${anthropic ? 'messages' : 'chat/completions'}`,
    headers: anthropic
      ? { ...json, 'anthropic-version': '2023-06-01', 'x-api-key': key }
      : { ...json, authorization: `Bearer ${key}` },
    body: {
      model: client === 'claude' ? 'claude-sonnet-4-5' : client === 'to-responses' ? 'o3-pro' : 'gpt-4.1-mini',
      [anthropic ? 'max_tokens' : 'max_completion_tokens']: 64,
      stream,
      messages: MESSAGES,
    },
  };
}

/** One call to the gateway, to the end of its body, in ms, as a client of that API would send it. */
async function timed(url: string, key: string, i: number, client: Client, stream: boolean): Promise<number> {
  const session = { 'x-cplane-session': `SES-BENCH-${i % 64}` };
  const { path, headers, body } = request(client, key, stream);
  const start = process.hrtime.bigint();
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { ...headers, ...session },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`bench call answered ${res.status}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function ratioRow(name: string, translated: number[], passed: number[]): BenchRow {
  const value = percentile(translated, 50);
  const baseline = percentile(passed, 50);
  const ratio = value / baseline;
  return {
    name,
    value: Math.round(value * 1000),
    unit: 'µs (relaxed)',
    baseline: Math.round(baseline * 1000),
    ratio,
    target: '<= 1.2 × pass-through',
    ok: ratio <= 1.2,
  };
}

export default defineSuite({
  name: 'translate',
  async run({ quick, tmp }) {
    const n = quick ? 200 : 1000;
    const up = await upstream();
    const upstreamUrl = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
    // Relaxed: no fsync on the call path, so the ratio is the translation's cost, not the disk's noise.
    const served = await inProcessGateway({ tmp, name: 'translate', upstreamUrl, durability: 'relaxed', openai: true });
    try {
      const clients: Client[] = [
        'anthropic',
        'openai',
        'gemini',
        'responses',
        'claude',
        'to-responses',
        'o3-pro-direct',
      ];
      const samples = {
        whole: Object.fromEntries(clients.map((c) => [c, []])) as unknown as Record<Client, number[]>,
        stream: Object.fromEntries(clients.map((c) => [c, []])) as unknown as Record<Client, number[]>,
      };
      for (let i = 0; i < 20; i += 1) for (const c of clients) await timed(served.url, served.key, i, c, false);
      for (let i = 0; i < n; i += 1) {
        // Each path leads a round in turn: none is always the one timed right after another's work.
        const order = clients.map((_, k) => clients[(i + k) % clients.length] as Client);
        for (const stream of [false, true])
          for (const client of order)
            samples[stream ? 'stream' : 'whole'][client].push(await timed(served.url, served.key, i, client, stream));
      }
      return [
        ratioRow('translate_overhead_p50', samples.whole.anthropic, samples.whole.openai),
        ratioRow('translate_stream_overhead_p50', samples.stream.anthropic, samples.stream.openai),
        // A Gemini client for the same gpt model: translated to Messages, then to Chat Completions (the pivot).
        ratioRow('translate_gemini_overhead_p50', samples.whole.gemini, samples.whole.openai),
        ratioRow('translate_gemini_stream_overhead_p50', samples.stream.gemini, samples.stream.openai),
        // A Responses API client for a Claude model (translated to Messages) against an Anthropic client asking for it.
        ratioRow('translate_responses_overhead_p50', samples.whole.responses, samples.whole.claude),
        ratioRow('translate_responses_stream_overhead_p50', samples.stream.responses, samples.stream.claude),
        // An Anthropic client for o3-pro (translated to the Responses API) against a Responses client asking for it.
        ratioRow('translate_to_responses_overhead_p50', samples.whole['to-responses'], samples.whole['o3-pro-direct']),
        ratioRow(
          'translate_to_responses_stream_overhead_p50',
          samples.stream['to-responses'],
          samples.stream['o3-pro-direct'],
        ),
      ];
    } finally {
      await served.close();
      await new Promise((resolve) => up.close(resolve));
    }
  },
});
