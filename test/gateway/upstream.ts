// A local upstream on 127.0.0.1 speaking Anthropic's and OpenAI's real wire formats — JSON and SSE, tool use,
// usage with cache buckets — with faults injected per request. The gateway under test forwards to it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A prompt count an honest upstream can report for the short bodies the tests send (within their reservation bound).
export const USAGE = { input: 12, cacheWrite: 3, cacheRead: 40, output: 17 } as const;

export type Fault =
  | { status: number; body: unknown; headers?: Record<string, string> }
  /**
   * Answer with exactly these bytes (a hostile or broken upstream); `ending` keeps the connection open after them
   * without ending the body (`hang`), or destroys it before the body's end is sent (`drop`).
   */
  | { raw: string | Uint8Array; status?: number; contentType?: string; ending?: 'hang' | 'drop' }
  /** Stream this many frames, then destroy the socket. */
  | { dieAfterFrames: number }
  /** Wait this long between frames (a client can abort meanwhile). */
  | { frameDelayMs: number }
  /** Wait this long before answering at all. */
  | { replyDelayMs: number };

export interface SeenRequest {
  method: string;
  path: string;
  /** The query string, without its '?'. */
  query: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
}

/** A tool call an Anthropic answer carries: the tool's name and input, streamed in these `partial_json` pieces. */
export interface ToolUse {
  name: string;
  input: Record<string, unknown>;
  pieces: string[];
}

const WEATHER: ToolUse = { name: 'get_weather', input: { city: 'Paris' }, pieces: ['{"city": "Pa', 'ris"}'] };

export interface Upstream {
  url: string;
  /**
   * Asked of every Anthropic messages request when set: the tool call to answer with, or null for text. Unset, a
   * last user turn that mentions the weather (and carries no tool result) gets a `get_weather` call.
   */
  toolUse?: ((body: Record<string, unknown>) => ToolUse | null) | undefined;
  requests: SeenRequest[];
  faults: Fault[];
  /** Asked when no fault is queued: a fault for every request while it returns one (an upstream overloaded a while). */
  standing?: (() => Fault | undefined) | undefined;
  /** Replies whose client (the gateway) hung up before they were complete. */
  aborted: number;
  /** TCP connections accepted (a client that keeps its connections alive opens few). */
  connections: number;
  /** While set, every request waits for it before it is answered. */
  gate: Promise<void> | null;
  close(): Promise<void>;
}

const sse = (event: string | null, data: unknown): string =>
  `${event === null ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

function lastUserText(body: Record<string, unknown>): string {
  const messages = (body.messages ?? body.input) as unknown;
  if (typeof messages === 'string') return messages;
  const list = Array.isArray(messages) ? messages : [];
  const last = list[list.length - 1] as { content?: unknown } | undefined;
  const content = last?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((c: { text?: unknown; type?: unknown }) => (typeof c.text === 'string' ? c.text : String(c.type)))
      .join(' ');
  return '';
}

export async function startUpstream(keys: { anthropic: string; openai: string }): Promise<Upstream> {
  const state: Upstream = {
    url: '',
    requests: [],
    faults: [],
    aborted: 0,
    connections: 0,
    gate: null,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse, text: string): Promise<void> {
    const [path = '/', query = ''] = (req.url ?? '/').split('?', 2);
    const body = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
    state.requests.push({ method: req.method ?? '', path, query, headers: req.headers, body });
    res.once('close', () => {
      if (!res.writableEnded) state.aborted += 1;
    });
    const anthropic =
      path.startsWith('/v1/messages') || (path === '/v1/models' && req.headers['anthropic-version'] !== undefined);
    const authorised = anthropic
      ? req.headers['x-api-key'] === keys.anthropic
      : req.headers.authorization === `Bearer ${keys.openai}`;
    if (!authorised) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          anthropic
            ? { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }
            : {
                error: {
                  message: 'Incorrect API key provided',
                  type: 'invalid_request_error',
                  param: null,
                  code: 'invalid_api_key',
                },
              },
        ),
      );
      return;
    }
    if (state.gate !== null) await state.gate;
    const fault = state.faults.shift() ?? state.standing?.();
    if (fault && 'raw' in fault) {
      res.writeHead(fault.status ?? 200, { 'content-type': fault.contentType ?? 'application/json' });
      if (fault.ending === undefined) res.end(fault.raw);
      else if (fault.ending === 'drop') res.write(fault.raw, () => res.socket?.destroy());
      else res.write(fault.raw);
      return;
    }
    if (fault && 'status' in fault) {
      res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.headers ?? {}) });
      res.end(JSON.stringify(fault.body));
      return;
    }
    if (fault && 'replyDelayMs' in fault) {
      // In steps, not one timer: the test process may block (spawnSync), and a hang-up must be seen before replying.
      for (let waited = 0; waited < fault.replyDelayMs; waited += 10) {
        await new Promise((r) => setTimeout(r, 10));
        if (res.destroyed) return;
      }
    }
    const stream = fault === undefined || 'replyDelayMs' in fault || 'raw' in fault ? {} : fault;
    const paging = new URLSearchParams(query);
    if (path === '/v1/models' && anthropic && (paging.has('limit') || paging.has('after_id')))
      return json(res, anthropicModelsPage(Number(paging.get('limit') ?? 20), paging.get('after_id')));
    if (path === '/v1/models')
      return json(
        res,
        anthropic
          ? {
              data: [
                {
                  type: 'model',
                  id: 'claude-sonnet-4-5',
                  display_name: 'Claude Sonnet 4.5',
                  created_at: '2025-09-29T00:00:00Z',
                },
              ],
              has_more: false,
              first_id: 'claude-sonnet-4-5',
              last_id: 'claude-sonnet-4-5',
            }
          : { object: 'list', data: [{ id: 'gpt-4.1-mini', object: 'model', created: 1, owned_by: 'openai' }] },
      );
    if (path === '/v1/messages/count_tokens') return json(res, { input_tokens: text.length });
    if (body === null) return json(res, {}, 400);
    const model = String(body.model);
    const last = lastUserText(body);
    const tool = last.includes('weather') && !last.includes('tool_result');
    if (path === '/v1/messages') {
      const use = state.toolUse === undefined ? (tool ? WEATHER : null) : state.toolUse(body);
      return body.stream === true
        ? frames(res, anthropicFrames(model, use), stream)
        : json(res, anthropicMessage(model, use), 200, { 'request-id': 'req_upstream_1' });
    }
    if (path === '/v1/chat/completions') {
      const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      return body.stream === true
        ? frames(res, chatFrames(model, tool, usage), stream)
        : json(res, chatCompletion(model, tool));
    }
    if (path === '/v1/responses')
      return body.stream === true
        ? frames(res, responsesFrames(model), stream)
        : json(res, responseObject(model, 'completed'));
    return json(res, { error: { message: 'not found', type: 'invalid_request_error', param: null, code: null } }, 404);
  }
  function json(res: ServerResponse, value: unknown, status = 200, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }
  async function frames(
    res: ServerResponse,
    list: string[],
    fault: { dieAfterFrames?: number; frameDelayMs?: number },
  ): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (let i = 0; i < list.length; i += 1) {
      if (fault.dieAfterFrames !== undefined && i === fault.dieAfterFrames) {
        // Let the frames so far reach the client first: then the connection dies mid-body.
        await new Promise((r) => setTimeout(r, 50));
        res.socket?.destroy();
        return;
      }
      if (res.destroyed) return;
      res.write(list[i]);
      if (fault.frameDelayMs !== undefined) await new Promise((r) => setTimeout(r, fault.frameDelayMs));
    }
    res.end();
  }
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

const anthropicUsage = {
  input_tokens: USAGE.input,
  cache_creation_input_tokens: USAGE.cacheWrite,
  cache_read_input_tokens: USAGE.cacheRead,
  output_tokens: USAGE.output,
};

function anthropicMessage(model: string, tool: ToolUse | null): unknown {
  const content: unknown[] = [{ type: 'text', text: 'Hello from upstream' }];
  if (tool) content.push({ type: 'tool_use', id: 'toolu_01', name: tool.name, input: tool.input });
  return {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: tool ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: anthropicUsage,
  };
}

function anthropicFrames(model: string, tool: ToolUse | null): string[] {
  const out = [
    sse('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_01',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...anthropicUsage, output_tokens: 1 },
      },
    }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    sse('ping', { type: 'ping' }),
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'Hello ' },
    }),
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'from upstream' },
    }),
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
  ];
  if (tool) {
    out.push(
      sse('content_block_start', {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_01', name: tool.name, input: {} },
      }),
      ...tool.pieces.map((piece) =>
        sse('content_block_delta', {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: piece },
        }),
      ),
      sse('content_block_stop', { type: 'content_block_stop', index: 1 }),
    );
  }
  out.push(
    // Cumulative usage: the cache buckets repeated, output the final count (a summing reader double counts).
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: {
        output_tokens: USAGE.output,
        cache_read_input_tokens: USAGE.cacheRead,
        cache_creation_input_tokens: USAGE.cacheWrite,
        input_tokens: USAGE.input,
      },
    }),
    sse('message_stop', { type: 'message_stop' }),
  );
  return out;
}

const chatUsage = {
  prompt_tokens: USAGE.input + USAGE.cacheRead,
  completion_tokens: USAGE.output,
  total_tokens: USAGE.input + USAGE.cacheRead + USAGE.output,
  prompt_tokens_details: { cached_tokens: USAGE.cacheRead },
};

function chatCompletion(model: string, tool: boolean): unknown {
  const message = tool
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      }
    : { role: 'assistant', content: 'Hello from upstream' };
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message, finish_reason: tool ? 'tool_calls' : 'stop', logprobs: null }],
    usage: chatUsage,
  };
}

function chatFrames(model: string, tool: boolean, usage: boolean): string[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    sse(null, {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model,
      choices,
      ...(usage ? { usage: null } : {}),
      ...extra,
    });
  const out = [chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])];
  if (tool) {
    out.push(
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
            ],
          },
          finish_reason: null,
        },
      ]),
    );
    out.push(
      chunk([
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] },
          finish_reason: null,
        },
      ]),
    );
  } else {
    out.push(
      chunk([{ index: 0, delta: { content: 'Hello ' }, finish_reason: null }]),
      chunk([{ index: 0, delta: { content: 'from upstream' }, finish_reason: null }]),
    );
  }
  out.push(chunk([{ index: 0, delta: {}, finish_reason: tool ? 'tool_calls' : 'stop' }]));
  if (usage) out.push(chunk([], { usage: chatUsage }));
  out.push(sse(null, '[DONE]'));
  return out;
}

const responsesUsage = {
  input_tokens: USAGE.input + USAGE.cacheRead,
  input_tokens_details: { cached_tokens: USAGE.cacheRead },
  output_tokens: USAGE.output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: USAGE.input + USAGE.cacheRead + USAGE.output,
};
const message = {
  id: 'msg_1',
  type: 'message',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text: 'Hello from upstream', annotations: [] }],
};

function responseObject(model: string, status: string): Record<string, unknown> {
  const done = status === 'completed';
  return {
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    status,
    model,
    output: done ? [message] : [],
    usage: done ? responsesUsage : null,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    parallel_tool_calls: true,
    previous_response_id: null,
    temperature: 1,
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    metadata: {},
  };
}

function responsesFrames(model: string): string[] {
  let n = 0;
  const ev = (type: string, data: Record<string, unknown>): string =>
    sse(type, { type, sequence_number: n++, ...data });
  return [
    ev('response.created', { response: responseObject(model, 'in_progress') }),
    ev('response.in_progress', { response: responseObject(model, 'in_progress') }),
    ev('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } }),
    ev('response.content_part.added', {
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    }),
    ev('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hello ' }),
    ev('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'from upstream' }),
    ev('response.output_text.done', {
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      text: 'Hello from upstream',
    }),
    ev('response.content_part.done', { item_id: 'msg_1', output_index: 0, content_index: 0, part: message.content[0] }),
    ev('response.output_item.done', { output_index: 0, item: message }),
    ev('response.completed', { response: responseObject(model, 'completed') }),
  ];
}

/** One page of Anthropic's models list, paged as the API pages it (`after_id`, `limit`, `has_more`). */
function anthropicModelsPage(limit: number, afterId: string | null): unknown {
  const all = ['claude-sonnet-4-5', 'claude-opus-4-1', 'claude-haiku-4-5'];
  const start = afterId === null ? 0 : all.indexOf(afterId) + 1;
  const page = all.slice(start, start + limit);
  return {
    data: page.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-09-29T00:00:00Z' })),
    has_more: start + limit < all.length,
    first_id: page[0] ?? null,
    last_id: page.at(-1) ?? null,
  };
}
