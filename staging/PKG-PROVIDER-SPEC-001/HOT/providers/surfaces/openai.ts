// The OpenAI wire formats (Chat Completions, Responses): their usage, stop reasons, and the readers of a whole or
// streamed reply. Any provider speaking them (OpenAI, a compatible server, the mock) reads its replies with these.
import { asObject, getCount, getObject, getString, type JsonObject } from '../json.js';
import { stopReasonNormaliser } from '../reply.js';
import type { Usage } from '../spec.js';
import { boundedRaw, emptyResult, eventJson, passThroughReader, shortField, toolInput } from '../wire/reader.js';
import type { WireReader, WireResult, WireSurface } from '../wire/spec.js';
import { EmbeddingsReader } from './openai-embeddings.js';

/**
 * `prompt_tokens` already includes cached tokens; `prompt_tokens_details.cached_tokens` is the cache
 * read (unknown when a server omits the details). Chat Completions has no cache-write bucket: every
 * prompt token not read from cache is billed as plain input. So when the prompt count is reported,
 * cache writes are a known 0; with no prompt count, they are unknown like everything else.
 */
export function parseUsage(usage: JsonObject | null): Usage {
  const input = getCount(usage, 'prompt_tokens');
  return {
    input_tokens: input,
    output_tokens: getCount(usage, 'completion_tokens'),
    // DeepSeek reports its cache hits as `prompt_cache_hit_tokens` (its prompt_tokens = hits + misses).
    cache_read_tokens:
      getCount(getObject(usage, 'prompt_tokens_details'), 'cached_tokens') ??
      getCount(usage, 'prompt_cache_hit_tokens'),
    cache_write_tokens: input === null ? null : 0,
    raw: usage,
  };
}

/**
 * Usage from an OpenAI-compatible server (the compatible presets): as `parseUsage`, except that a reply with a
 * prompt count but no cache-read count (no `prompt_tokens_details`, or no `cached_tokens` in it, as Mistral,
 * Together, Ollama and vLLM answer) reads zero cache reads rather than unknown. `prompt_tokens` is every prompt
 * token, and a server that names no cached part bills none at a discount, so zero reads prices the whole prompt
 * at the input price: what the vendor's own usage line charges, and never less. OpenAI itself always sends the
 * details, so its readers keep an absent count unknown (a change in its reply is noticed, not priced away).
 */
export function compatibleUsage(usage: JsonObject | null): Usage {
  const parsed = parseUsage(usage);
  if (parsed.cache_read_tokens === null && parsed.input_tokens !== null) parsed.cache_read_tokens = 0;
  return parsed;
}

export const normaliseStopReason = stopReasonNormaliser({
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'content_filter',
});

/** The reader of an OpenAI surface; `usage` reads Chat usage (`compatibleUsage` for compatible servers). */
export function openAiReader(surface: WireSurface, usage: (u: JsonObject | null) => Usage = parseUsage): WireReader {
  if (surface === 'openai.chat') return new ChatReader(usage);
  if (surface === 'openai.responses') return new ResponsesReader();
  if (surface === 'openai.embeddings') return new EmbeddingsReader();
  return passThroughReader();
}

interface ToolCall {
  id: string | null;
  name: string;
  args: string;
}

/** Chat Completions, first choice. Streaming usage comes from the one chunk `include_usage` adds. */
class ChatReader implements WireReader {
  private readonly state: WireResult = emptyResult();
  private text = '';
  private readonly calls = new Map<number, ToolCall>();
  private usage: JsonObject | null = null;

  constructor(private readonly parse: (u: JsonObject | null) => Usage) {}

  body(value: unknown): string | null {
    const body = asObject(value);
    if (body === null || !Array.isArray(body.choices)) return 'not a chat completion (no choices array)';
    const choice = asObject(body.choices[0]);
    const message = getObject(choice, 'message');
    if (typeof message?.content === 'string') this.text = message.content;
    if (Array.isArray(message?.tool_calls)) {
      message.tool_calls.forEach((item, index) => {
        this.toolDelta(index, asObject(item));
      });
    }
    this.state.model = shortField(body, 'model');
    this.stop(getString(choice, 'finish_reason'));
    this.usage = getObject(body, 'usage');
    this.state.usage_final = this.usage !== null;
    this.state.complete = true;
    return null;
  }

  event(_name: string | null, data: string): void {
    if (data.trim() === '[DONE]') {
      this.state.complete = true;
      return;
    }
    const chunk = eventJson(data);
    if (chunk === null) return;
    if (chunk.error !== undefined) {
      const error = getObject(chunk, 'error');
      this.state.stream_error = `${getString(error, 'type') ?? 'error'}: ${getString(error, 'message') ?? ''}`;
      return;
    }
    // Azure opens a stream with a prompt_filter_results chunk whose model is "": the first named model is the one.
    if (!this.state.model) this.state.model = shortField(chunk, 'model') || null;
    const choice = Array.isArray(chunk.choices) ? asObject(chunk.choices[0]) : null;
    const delta = getObject(choice, 'delta');
    if (typeof delta?.content === 'string') this.text += delta.content;
    if (Array.isArray(delta?.tool_calls)) {
      for (const item of delta.tool_calls) {
        const call = asObject(item);
        this.toolDelta(typeof call?.index === 'number' ? call.index : 0, call);
      }
    }
    this.stop(getString(choice, 'finish_reason'));
    const usage = getObject(chunk, 'usage');
    if (usage !== null) {
      this.usage = usage;
      this.state.usage_final = true;
    }
  }

  result(): WireResult {
    const blocks: Record<string, unknown>[] = this.text === '' ? [] : [{ type: 'text', text: this.text }];
    for (const call of [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1])) {
      blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call.args) });
    }
    return { ...this.state, blocks, usage: usageOf(this.usage, this.parse) };
  }

  private toolDelta(index: number, call: JsonObject | null): void {
    const fn = getObject(call, 'function');
    const open = this.calls.get(index) ?? { id: null, name: '', args: '' };
    open.id ??= getString(call, 'id');
    open.name += getString(fn, 'name') ?? '';
    open.args += getString(fn, 'arguments') ?? '';
    this.calls.set(index, open);
  }

  private stop(raw: string | null): void {
    if (raw === null) return;
    this.state.raw_stop_reason = raw;
    this.state.stop_reason = normaliseStopReason(raw);
  }
}

/** Responses: the whole response object (a body, or the one `response.completed` / `.failed` / `.incomplete` carries). */
class ResponsesReader implements WireReader {
  private readonly state: WireResult = emptyResult();
  private blocks: Record<string, unknown>[] = [];
  private usage: JsonObject | null = null;
  private text = '';

  body(value: unknown): string | null {
    const body = asObject(value);
    if (body === null || !Array.isArray(body.output)) return 'not a response object (no output array)';
    this.response(body);
    return null;
  }

  event(name: string | null, data: string): void {
    const json = eventJson(data);
    const type = name ?? getString(json, 'type');
    if (json === null) return;
    if (type === 'response.created' || type === 'response.in_progress') {
      this.state.model ??= shortField(getObject(json, 'response'), 'model');
    } else if (type === 'response.output_text.delta' && typeof json.delta === 'string') {
      this.text += json.delta;
    } else if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      const response = getObject(json, 'response');
      if (response !== null) this.response(response);
      if (type === 'response.failed') {
        const error = getObject(response, 'error');
        this.state.stream_error = `${getString(error, 'code') ?? 'response.failed'}: ${getString(error, 'message') ?? ''}`;
      }
    } else if (type === 'error') {
      this.state.stream_error = `${getString(json, 'code') ?? 'error'}: ${getString(json, 'message') ?? ''}`;
    }
  }

  result(): WireResult {
    // A stream cut short never delivered the final object: keep the text seen so far.
    const blocks = this.state.complete || this.text === '' ? this.blocks : [{ type: 'text', text: this.text }];
    return { ...this.state, blocks, usage: usageOf(this.usage, responsesUsage) };
  }

  private response(body: JsonObject): void {
    this.state.model = shortField(body, 'model') ?? this.state.model;
    this.blocks = [];
    for (const item of body.output as unknown[]) {
      const o = asObject(item);
      if (o?.type === 'message' && Array.isArray(o.content)) {
        const text = o.content
          .map((c) => asObject(c))
          .filter((c) => c?.type === 'output_text' && typeof c.text === 'string')
          .map((c) => c?.text as string)
          .join('');
        if (text !== '') this.blocks.push({ type: 'text', text });
      } else if (o?.type === 'function_call') {
        this.blocks.push({
          type: 'tool_use',
          id: getString(o, 'call_id'),
          name: getString(o, 'name'),
          input: toolInput(getString(o, 'arguments') ?? ''),
        });
      }
    }
    const status = getString(body, 'status');
    const incomplete = getString(getObject(body, 'incomplete_details'), 'reason');
    this.state.raw_stop_reason = incomplete ?? status;
    this.state.stop_reason = this.blocks.some((b) => b.type === 'tool_use')
      ? 'tool_use'
      : incomplete === 'max_output_tokens'
        ? 'length'
        : incomplete === 'content_filter'
          ? 'content_filter'
          : status === 'completed'
            ? 'stop'
            : 'other';
    this.usage = getObject(body, 'usage');
    this.state.usage_final = this.usage !== null;
    this.state.complete = true;
  }
}

function usageOf(raw: JsonObject | null, parse: (u: JsonObject | null) => Usage): Usage {
  return raw === null ? parse(null) : { ...parse(raw), raw: boundedRaw(raw) };
}

/** Responses usage: `input_tokens` counts cached ones; reads in `input_tokens_details.cached_tokens`; no write bucket. */
export function responsesUsage(usage: JsonObject | null): Usage {
  const input = getCount(usage, 'input_tokens');
  return {
    input_tokens: input,
    output_tokens: getCount(usage, 'output_tokens'),
    cache_read_tokens: getCount(getObject(usage, 'input_tokens_details'), 'cached_tokens'),
    cache_write_tokens: input === null ? null : 0,
    raw: usage,
  };
}
