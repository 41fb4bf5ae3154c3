/**
 * The input a call to an OpenAI-family model reserves, counted with the model's own published tokenizer
 * (docs/production.md, "How much a call reserves"). Every text the model reads is counted exactly; what is not
 * plain text the model reads as given is counted by its JSON, which carries all of it; and each message, tool and
 * request gets a margin on top of the chat template OpenAI documents (3 tokens a message, 3 to prime the reply),
 * so the count is an upper bound of what the API bills, never below it. A body whose input these rules cannot bound
 * (a file or audio block, a conversation stored upstream) gets null: the caller keeps the byte bound.
 */
import { IMAGE_TOKENS } from '../bound.js';
import { encodingForModel, type TextCounter, textCounter } from './openai-encoder.js';

/** The chat template per message (`<|im_start|>`, `<|im_sep|>` or the role's newline, `<|im_end|>`) and the reply's primer. */
export const TEMPLATE_TOKENS = 3;
/**
 * Beyond the template, per message or item: what the API renders around fields other than role and content (a
 * name, a tool call's id and arguments, each counted by its text) and any change to the template it documents.
 */
export const OPENAI_MESSAGE_MARGIN = 8;
/** The tool namespace OpenAI wraps tool definitions in (`namespace functions { … }`), once per request. */
export const OPENAI_TOOLS_OVERHEAD = 64;
/** Per tool, beyond its JSON: its rendering as a type declaration with comments. */
export const OPENAI_TOOL_MARGIN = 16;

const IMAGE_PARTS = new Set(['image', 'image_url', 'input_image']);
/** Parts billed by what the API extracts or hears (PDF pages, audio), which their JSON does not bound. */
const UNBOUNDED_PARTS = new Set(['file', 'input_file', 'document', 'input_audio', 'audio']);
/** Responses input items whose fields are all text the model reads as given (or a message's parts). */
const TEXT_ITEMS = new Set([
  'message',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'local_shell_call_output',
  'mcp_call',
  'mcp_list_tools',
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Null: not countable (the caller keeps the byte bound). */
type Count = number | null;

function sum(a: Count, b: Count): Count {
  return a === null || b === null ? null : a + b;
}

/** A value the model reads as text: a string as is, anything else by its JSON (which holds all its text). */
function valueTokens(c: TextCounter, value: unknown): number {
  if (value === undefined || value === null) return 0;
  return c.count(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
}

/** A content part: its text fields counted, an image at its pixel-billed bound, a file or audio not at all. */
function partTokens(c: TextCounter, part: unknown): Count {
  if (!isObject(part)) return valueTokens(c, part) + 1;
  const type = part.type;
  if (typeof type === 'string' && IMAGE_PARTS.has(type)) return IMAGE_TOKENS;
  if (typeof type === 'string' && UNBOUNDED_PARTS.has(type)) return null;
  let total = 1;
  for (const key in part) if (key !== 'type' && key !== 'cache_control') total += valueTokens(c, part[key]) + 1;
  return total;
}

function contentTokens(c: TextCounter, content: unknown): Count {
  if (!Array.isArray(content)) return valueTokens(c, content);
  let total: Count = 0;
  for (const part of content) total = sum(total, partTokens(c, part));
  return total;
}

/**
 * One message (or Responses item): the template, each field's text (the role, a name, the content, a tool call's
 * JSON), the margin. For a message of a role and a text this is the library's chat count plus the margin.
 */
function messageTokens(c: TextCounter, message: unknown): Count {
  if (!isObject(message)) return TEMPLATE_TOKENS + OPENAI_MESSAGE_MARGIN + valueTokens(c, message);
  let total: Count = TEMPLATE_TOKENS + OPENAI_MESSAGE_MARGIN;
  for (const key in message) {
    const value = message[key];
    total = sum(total, key === 'content' ? contentTokens(c, value) : valueTokens(c, value));
  }
  return total;
}

/** A Responses input item: a message or a tool call as text; reasoning by its bytes (its encrypted text); else null. */
function itemTokens(c: TextCounter, item: unknown): Count {
  if (!isObject(item)) return messageTokens(c, item);
  const type = item.type ?? (item.role === undefined ? undefined : 'message');
  if (type === 'reasoning') return TEMPLATE_TOKENS + OPENAI_MESSAGE_MARGIN + Buffer.byteLength(JSON.stringify(item));
  return typeof type === 'string' && TEXT_ITEMS.has(type) ? messageTokens(c, item) : null;
}

function toolsTokens(c: TextCounter, tools: unknown): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  let total = OPENAI_TOOLS_OVERHEAD;
  for (const tool of tools) total += valueTokens(c, tool) + OPENAI_TOOL_MARGIN;
  return total;
}

/** Every other field (response_format's schema, tool_choice, metadata…) by its JSON: what could reach the prompt. */
function restTokens(c: TextCounter, body: Readonly<Record<string, unknown>>, counted: readonly string[]): number {
  const rest: Record<string, unknown> = {};
  for (const key in body) if (!counted.includes(key)) rest[key] = body[key];
  return valueTokens(c, rest);
}

function chatTokens(c: TextCounter, body: Readonly<Record<string, unknown>>): Count {
  if (!Array.isArray(body.messages)) return null;
  let total: Count = TEMPLATE_TOKENS + toolsTokens(c, body.tools) + restTokens(c, body, ['messages', 'tools']);
  for (const message of body.messages) total = sum(total, messageTokens(c, message));
  return total;
}

function responsesTokens(c: TextCounter, body: Readonly<Record<string, unknown>>): Count {
  // A stored conversation is prepended upstream: nothing in the body bounds it.
  if (body.previous_response_id !== undefined || body.conversation !== undefined) return null;
  const counted = ['input', 'instructions', 'tools'];
  let total: Count = TEMPLATE_TOKENS + toolsTokens(c, body.tools) + restTokens(c, body, counted);
  if (body.instructions !== undefined) total = sum(total, messageTokens(c, { content: body.instructions }));
  const input = body.input;
  if (typeof input === 'string') return sum(total, messageTokens(c, { role: 'user', content: input }));
  if (!Array.isArray(input)) return null;
  for (const item of input) total = sum(total, itemTokens(c, item));
  return total;
}

/**
 * An upper bound of the input tokens OpenAI bills for a Chat Completions or Responses body sent to `model`, or
 * null when the model's tokenizer is not OpenAI's or the body holds input these rules cannot bound.
 */
export async function openaiInputBound(
  body: Readonly<Record<string, unknown>>,
  model: string,
  surface: 'openai.chat' | 'openai.responses',
): Promise<number | null> {
  const encoding = encodingForModel(model);
  if (encoding === null) return null;
  const counter = await textCounter(encoding);
  return surface === 'openai.chat' ? chatTokens(counter, body) : responsesTokens(counter, body);
}
