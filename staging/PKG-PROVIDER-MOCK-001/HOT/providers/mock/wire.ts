// The mock's replies in the real wire formats of the surfaces it answers, whole or as SSE events, so the readers
// every provider shares (`#providers/surfaces/*`) and the gateway read them exactly as they read an upstream's.
import type { StopReason, Usage } from '#providers/spec.js';
import type { WireSurface } from '#providers/wire/spec.js';

/** The generation surfaces the mock answers in-process. */
export const MOCK_SURFACES: readonly WireSurface[] = ['anthropic.messages', 'openai.chat', 'openai.responses'];

/** What one scripted answer says, whatever surface it is written for. */
export interface MockReply {
  text: string;
  model: string;
  stop: StopReason;
  usage: Omit<Usage, 'raw'>;
}

const ANTHROPIC_STOP: Record<StopReason, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_use: 'tool_use',
  content_filter: 'refusal',
  other: 'pause_turn',
};
const CHAT_STOP: Record<StopReason, string> = {
  stop: 'stop',
  length: 'length',
  tool_use: 'tool_calls',
  content_filter: 'content_filter',
  other: 'other',
};

/** The reply's body: one JSON document, or the surface's SSE events in order. */
export function mockWireBody(surface: WireSurface, reply: MockReply, stream: boolean, includeUsage: boolean): string[] {
  if (surface === 'anthropic.messages') return stream ? anthropicEvents(reply) : [json(anthropicMessage(reply))];
  if (surface === 'openai.chat') return stream ? chatEvents(reply, includeUsage) : [json(chatCompletion(reply))];
  return stream ? responsesEvents(reply) : [json(responseObject(reply, 'completed'))];
}

function json(value: unknown): string {
  return JSON.stringify(value);
}

function sse(event: string | null, data: unknown): string {
  return `${event === null ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : json(data)}\n\n`;
}

/** A count the mock was told is unknown is left out, as a server that does not report it would. */
function known(fields: Record<string, number | null>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== null) out[key] = value;
  return out;
}

function anthropicUsage(u: MockReply['usage']): Record<string, number> {
  const { input_tokens: all, cache_read_tokens: read, cache_write_tokens: write } = u;
  const uncached = all === null || read === null || write === null ? null : Math.max(0, all - read - write);
  return known({
    input_tokens: uncached,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    output_tokens: u.output_tokens,
  });
}

function anthropicMessage(reply: MockReply): Record<string, unknown> {
  return {
    id: 'msg_mock',
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: [{ type: 'text', text: reply.text }],
    stop_reason: ANTHROPIC_STOP[reply.stop],
    stop_sequence: null,
    usage: anthropicUsage(reply.usage),
  };
}

function anthropicEvents(reply: MockReply): string[] {
  const usage = anthropicUsage(reply.usage);
  const start = { ...anthropicMessage(reply), content: [], stop_reason: null, usage: { ...usage, output_tokens: 0 } };
  return [
    sse('message_start', { type: 'message_start', message: start }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: reply.text },
    }),
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: ANTHROPIC_STOP[reply.stop], stop_sequence: null },
      usage,
    }),
    sse('message_stop', { type: 'message_stop' }),
  ];
}

function chatUsage(u: MockReply['usage']): Record<string, unknown> {
  const total = u.input_tokens === null || u.output_tokens === null ? null : u.input_tokens + u.output_tokens;
  return {
    ...known({ prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens, total_tokens: total }),
    prompt_tokens_details: known({ cached_tokens: u.cache_read_tokens }),
  };
}

function chatCompletion(reply: MockReply): Record<string, unknown> {
  return {
    id: 'chatcmpl-mock',
    object: 'chat.completion',
    created: 0,
    model: reply.model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: CHAT_STOP[reply.stop] }],
    usage: chatUsage(reply.usage),
  };
}

function chatEvents(reply: MockReply, includeUsage: boolean): string[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    sse(null, {
      id: 'chatcmpl-mock',
      object: 'chat.completion.chunk',
      created: 0,
      model: reply.model,
      choices,
      ...extra,
    });
  const out = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: reply.text }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: CHAT_STOP[reply.stop] }]),
  ];
  // As OpenAI does: the usage chunk only when the request asked for it (`stream_options.include_usage`).
  if (includeUsage) out.push(chunk([], { usage: chatUsage(reply.usage) }));
  out.push(sse(null, '[DONE]'));
  return out;
}

function responseObject(reply: MockReply, status: 'in_progress' | 'completed'): Record<string, unknown> {
  const done = status === 'completed';
  const u = reply.usage;
  const total = u.input_tokens === null || u.output_tokens === null ? null : u.input_tokens + u.output_tokens;
  const incomplete =
    reply.stop === 'length' ? 'max_output_tokens' : reply.stop === 'content_filter' ? 'content_filter' : null;
  return {
    id: 'resp_mock',
    object: 'response',
    status: done && incomplete !== null ? 'incomplete' : status,
    model: reply.model,
    incomplete_details: done && incomplete !== null ? { reason: incomplete } : null,
    output: done
      ? [
          {
            type: 'message',
            id: 'msg_mock',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: reply.text, annotations: [] }],
          },
        ]
      : [],
    usage: done
      ? {
          ...known({ input_tokens: u.input_tokens, output_tokens: u.output_tokens, total_tokens: total }),
          input_tokens_details: known({ cached_tokens: u.cache_read_tokens }),
        }
      : null,
  };
}

function responsesEvents(reply: MockReply): string[] {
  let n = 0;
  const ev = (type: string, data: Record<string, unknown>): string =>
    sse(type, { type, sequence_number: n++, ...data });
  const completed = responseObject(reply, 'completed');
  return [
    ev('response.created', { response: responseObject(reply, 'in_progress') }),
    ev('response.output_text.delta', { item_id: 'msg_mock', output_index: 0, content_index: 0, delta: reply.text }),
    ev(completed.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: completed }),
  ];
}
