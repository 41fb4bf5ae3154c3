// A fake OpenAI upstream on 127.0.0.1 that serves only `POST /v1/responses`, as OpenAI serves its Responses-only
// models (o3-pro, the codex models): any other path answers OpenAI's 404. Its replies follow the Responses API
// reference: the response object (reasoning item, message with output_text, function_call with a call_id,
// status completed or incomplete, usage with cached and reasoning tokens) and the streaming events, each with its
// `type` and `sequence_number`, as the reference's streaming examples show them.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The usage every reply reports: input includes the cached tokens, output includes the reasoning tokens. */
export const RESPONSES_USAGE = { input: 1200, cached: 1024, output: 180, reasoning: 128 } as const;

export interface SeenResponsesRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
}

export interface ResponsesUpstream {
  url: string;
  requests: SeenResponsesRequest[];
  close(): Promise<void>;
}

const RESPONSE_ID = 'resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41';

const usage = () => ({
  input_tokens: RESPONSES_USAGE.input,
  input_tokens_details: { cached_tokens: RESPONSES_USAGE.cached },
  output_tokens: RESPONSES_USAGE.output,
  output_tokens_details: { reasoning_tokens: RESPONSES_USAGE.reasoning },
  total_tokens: RESPONSES_USAGE.input + RESPONSES_USAGE.output,
});

/** The response object around `output`, its other fields as the reference's example has them. */
function response(body: Record<string, unknown>, status: string, output: unknown[]): Record<string, unknown> {
  return {
    id: RESPONSE_ID,
    object: 'response',
    created_at: 1741476777,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: `${String(body.model)}-2025-06-10`,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: 'medium', summary: null },
    store: body.store ?? true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: 1,
    truncation: 'disabled',
    usage: status === 'in_progress' ? null : usage(),
    user: null,
    metadata: {},
  };
}

const REASONING = { id: 'rs_6876cf02e0bc8192b74af0fb64b715ff06fa2fcced15a5ac', type: 'reasoning', summary: [] };
const MESSAGE_ID = 'msg_67ccd3acc8d48190a77525dc6de64b4104becb25c45c1d41';
const CALL = { id: 'fc_12345xyz', call_id: 'call_12345xyz', name: 'get_weather' };
const ARGS = ['{"city":', '"Paris"}'];

/** What the model answers: a get_weather call when tools are offered and no call output was sent, else text. */
function wantsCall(body: Record<string, unknown>): boolean {
  const input = Array.isArray(body.input) ? (body.input as Array<{ type?: unknown }>) : [];
  return Array.isArray(body.tools) && body.tools.length > 0 && !input.some((i) => i.type === 'function_call_output');
}

/** `LONG` in the prompt: the reply stops at max_output_tokens (status incomplete). */
const cutShort = (body: Record<string, unknown>): boolean => JSON.stringify(body.input ?? '').includes('LONG');

const TEXT = 'Sunny in Paris.';

function output(body: Record<string, unknown>): unknown[] {
  if (wantsCall(body))
    return [REASONING, { type: 'function_call', ...CALL, arguments: ARGS.join(''), status: 'completed' }];
  const content = [{ type: 'output_text', text: TEXT, annotations: [] }];
  const status = cutShort(body) ? 'incomplete' : 'completed';
  return [REASONING, { type: 'message', id: MESSAGE_ID, status, role: 'assistant', content }];
}

/** The stream's events in the reference's order, for the same output. */
function events(body: Record<string, unknown>): Array<Record<string, unknown>> {
  const status = cutShort(body) ? 'incomplete' : 'completed';
  const out: Array<Record<string, unknown>> = [
    { type: 'response.created', response: response(body, 'in_progress', []) },
    { type: 'response.in_progress', response: response(body, 'in_progress', []) },
    { type: 'response.output_item.added', output_index: 0, item: REASONING },
    { type: 'response.output_item.done', output_index: 0, item: REASONING },
  ];
  if (wantsCall(body)) {
    const item = { type: 'function_call', ...CALL, arguments: '', status: 'in_progress' };
    out.push({ type: 'response.output_item.added', output_index: 1, item });
    for (const delta of ARGS)
      out.push({ type: 'response.function_call_arguments.delta', item_id: CALL.id, output_index: 1, delta });
    const args = ARGS.join('');
    out.push({ type: 'response.function_call_arguments.done', item_id: CALL.id, output_index: 1, arguments: args });
    out.push({
      type: 'response.output_item.done',
      output_index: 1,
      item: { ...item, arguments: args, status: 'completed' },
    });
  } else {
    const at = { item_id: MESSAGE_ID, output_index: 1, content_index: 0 };
    const empty = { type: 'message', id: MESSAGE_ID, status: 'in_progress', role: 'assistant', content: [] };
    out.push({ type: 'response.output_item.added', output_index: 1, item: empty });
    out.push({ type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } });
    for (const delta of ['Sunny ', 'in Paris.'])
      out.push({ type: 'response.output_text.delta', ...at, delta, logprobs: [] });
    out.push({ type: 'response.output_text.done', ...at, text: TEXT, logprobs: [] });
    const part = { type: 'output_text', text: TEXT, annotations: [] };
    out.push({ type: 'response.content_part.done', ...at, part });
    out.push({
      type: 'response.output_item.done',
      output_index: 1,
      item: { ...empty, status, content: [part] },
    });
  }
  out.push({ type: `response.${status}`, response: response(body, status, output(body)) });
  return out.map((e, n) => ({ ...e, sequence_number: n }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_responses_only_1' });
  res.end(JSON.stringify(body));
}

/** Starts the fake; `key` is the bearer it takes. */
export async function startResponsesUpstream(key: string): Promise<ResponsesUpstream> {
  const requests: SeenResponsesRequest[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      const body = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
      const path = (req.url ?? '').split('?')[0] ?? '';
      requests.push({ path, headers: req.headers, body });
      if (req.headers.authorization !== `Bearer ${key}`)
        return answer(res, 401, {
          error: {
            message: 'Incorrect API key provided.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        });
      if (req.method !== 'POST' || path !== '/v1/responses' || body === null)
        return answer(res, 404, {
          error: {
            message: `Invalid URL (${req.method} ${path})`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        });
      if (body.stream !== true)
        return answer(res, 200, response(body, cutShort(body) ? 'incomplete' : 'completed', output(body)));
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'x-request-id': 'req_responses_only_1',
      });
      for (const event of events(body)) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
