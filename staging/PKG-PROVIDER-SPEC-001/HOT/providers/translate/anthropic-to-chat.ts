// An Anthropic Messages request as a Chat Completions request: every field mapped exactly, or refused by name.
import type { JsonObject } from '../json.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';
import { messagesFields } from './messages-fields.js';

type Msg = Record<string, unknown>;

// A caching hint: Chat servers cache prompt prefixes on their own, and the reply is the same either way.
const TOP = messagesFields('cache_control');

/** Messages' `metadata.user_id` (its end-user id for abuse detection), the only metadata a target can carry. */
export function metadataUser(body: JsonObject): string | undefined {
  if (body.metadata === undefined) return undefined;
  const metadata = objectAt(body.metadata, 'metadata');
  onlyKnown(metadata, new Set(['user_id']), 'metadata');
  if (metadata.user_id === undefined || metadata.user_id === null) return undefined;
  return stringAt(metadata.user_id, 'metadata.user_id');
}

/** Chat Completions takes at most four stop sequences. */
export const CHAT_MAX_STOP = 4;

/** The Chat Completions body for a Messages body (already checked by the gateway: model, max_tokens, messages). */
export function anthropicRequestToChat(body: JsonObject): Record<string, unknown> {
  onlyKnown(body, TOP, '');
  const out: Record<string, unknown> = { model: body.model };
  const messages: Msg[] = [];
  if (body.system !== undefined) messages.push({ role: 'system', content: systemText(body.system) });
  arrayAt(body.messages, 'messages').forEach((m, i) => {
    messages.push(...turn(m, `messages[${i}]`));
  });
  out.messages = messages;
  out.max_completion_tokens = body.max_tokens;
  if (body.stop_sequences !== undefined) {
    const stops = arrayAt(body.stop_sequences, 'stop_sequences');
    if (stops.length > CHAT_MAX_STOP)
      refuse('stop_sequences', `Chat Completions takes at most ${CHAT_MAX_STOP} stop sequences, got ${stops.length}`);
    out.stop = stops.map((s, i) => stringAt(s, `stop_sequences[${i}]`));
  }
  for (const key of ['temperature', 'top_p'] as const) if (body[key] !== undefined) out[key] = body[key];
  if (body.tools !== undefined) out.tools = arrayAt(body.tools, 'tools').map((t, i) => tool(t, `tools[${i}]`));
  if (body.tool_choice !== undefined) Object.assign(out, toolChoice(body.tool_choice));
  const user = metadataUser(body);
  if (user !== undefined) out.user = user;
  if (body.thinking !== undefined && objectAt(body.thinking, 'thinking').type !== 'disabled')
    refuse('thinking', 'Chat Completions returns no thinking blocks (extended thinking has no equivalent)');
  if (body.stream === true) {
    out.stream = true;
    // The usage chunk, so the reply's usage is the upstream's own count, never estimated.
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** A system prompt: a string, or text blocks (their cache_control is a caching hint Chat servers apply themselves). */
export function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  return arrayAt(system, 'system')
    .map((b, i) => {
      const block = objectAt(b, `system[${i}]`);
      onlyKnown(block, new Set(['type', 'text', 'cache_control']), `system[${i}]`);
      if (block.type !== 'text')
        refuse(`system[${i}].type`, `only text system blocks translate, got ${shown(block.type)}`);
      return stringAt(block.text, `system[${i}].text`);
    })
    .join('\n\n');
}

/** One Messages turn as one or more chat messages: a user turn's tool results become `tool` messages, first. */
function turn(value: unknown, at: string): Msg[] {
  const message = objectAt(value, at);
  onlyKnown(message, new Set(['role', 'content']), at);
  const { role, content } = message;
  if (role !== 'user' && role !== 'assistant')
    refuse(`${at}.role`, `user or assistant is required, got ${shown(role)}`);
  if (typeof content === 'string') return [{ role, content }];
  const blocks = arrayAt(content, `${at}.content`);
  // An empty turn would vanish in translation (a user turn becomes its tool messages and its parts).
  if (blocks.length === 0) refuse(`${at}.content`, 'an empty content array has no Chat Completions equivalent');
  return role === 'assistant' ? [assistantTurn(blocks, at)] : userTurn(blocks, at);
}

function userTurn(blocks: unknown[], at: string): Msg[] {
  const tools: Msg[] = [];
  const parts: Msg[] = [];
  blocks.forEach((b, j) => {
    const where = `${at}.content[${j}]`;
    const block = objectAt(b, where);
    if (block.type === 'tool_result') tools.push(toolResult(block, where));
    else parts.push(userPart(block, where));
  });
  return parts.length === 0 ? tools : [...tools, { role: 'user', content: parts }];
}

function userPart(block: JsonObject, at: string): Msg {
  if (block.type === 'text') {
    onlyKnown(block, new Set(['type', 'text', 'cache_control']), at);
    return { type: 'text', text: stringAt(block.text, `${at}.text`) };
  }
  if (block.type === 'image') {
    onlyKnown(block, new Set(['type', 'source', 'cache_control']), at);
    return { type: 'image_url', image_url: { url: imageUrl(block.source, `${at}.source`) } };
  }
  return refuse(`${at}.type`, `Chat Completions has no equivalent for a ${shown(block.type)} block`);
}

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** A Messages image source as the URL OpenAI's formats take: its own URL, or base64 data as a data URL. */
export function imageUrl(value: unknown, at: string): string {
  const source = objectAt(value, at);
  if (source.type === 'url') {
    onlyKnown(source, new Set(['type', 'url']), at);
    return stringAt(source.url, `${at}.url`);
  }
  if (source.type !== 'base64') refuse(`${at}.type`, `base64 or url images translate, got ${shown(source.type)}`);
  onlyKnown(source, new Set(['type', 'media_type', 'data']), at);
  const media = stringAt(source.media_type, `${at}.media_type`);
  if (!IMAGE_TYPES.has(media)) refuse(`${at}.media_type`, `an image type is required, got ${shown(media)}`);
  return `data:${media};base64,${stringAt(source.data, `${at}.data`)}`;
}

function toolResult(block: JsonObject, at: string): Msg {
  onlyKnown(block, new Set(['type', 'tool_use_id', 'content', 'is_error', 'cache_control']), at);
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    refuse(`${at}.is_error`, `a boolean is required, got ${shown(block.is_error)}`);
  const id = stringAt(block.tool_use_id, `${at}.tool_use_id`);
  const { content } = block;
  let text: string;
  if (content === undefined) text = '';
  else if (typeof content === 'string') text = content;
  else
    text = arrayAt(content, `${at}.content`)
      .map((c, k) => {
        const part = objectAt(c, `${at}.content[${k}]`);
        if (part.type !== 'text')
          refuse(
            `${at}.content[${k}].type`,
            `a Chat Completions tool message holds text only, got ${shown(part.type)}`,
          );
        onlyKnown(part, new Set(['type', 'text', 'cache_control']), `${at}.content[${k}]`);
        return stringAt(part.text, `${at}.content[${k}].text`);
      })
      .join('');
  return { role: 'tool', tool_call_id: id, content: block.is_error === true ? failedToolText(text) : text };
}

/** The prefix a failed tool's result carries in a Chat tool message, which has no error flag of its own. */
export const TOOL_ERROR_PREFIX = 'Error: ';

/**
 * A failed tool's result as the text a Chat model reads: Chat's tool message has no error flag, so the failure
 * is said in the content, where the model sees it (as OpenAI's own function-calling guide has tools report
 * errors), behind a fixed prefix; with no text of its own the result is the bare word.
 */
export function failedToolText(text: string): string {
  return text === '' ? 'Error' : `${TOOL_ERROR_PREFIX}${text}`;
}

function assistantTurn(blocks: unknown[], at: string): Msg {
  let text: string | null = null;
  const calls: Msg[] = [];
  blocks.forEach((b, j) => {
    const where = `${at}.content[${j}]`;
    const block = objectAt(b, where);
    if (block.type === 'text') {
      onlyKnown(block, new Set(['type', 'text', 'cache_control', 'citations']), where);
      if (block.citations !== undefined && block.citations !== null)
        refuse(`${where}.citations`, 'Chat Completions has no citations');
      // Text after a tool call would be reordered before it: Chat has one content string per message.
      if (calls.length > 0) refuse(`${where}`, 'text after a tool_use block cannot keep its place in Chat Completions');
      text = (text ?? '') + stringAt(block.text, `${where}.text`);
    } else if (block.type === 'tool_use') {
      onlyKnown(block, new Set(['type', 'id', 'name', 'input', 'cache_control']), where);
      calls.push({
        id: stringAt(block.id, `${where}.id`),
        type: 'function',
        function: {
          name: stringAt(block.name, `${where}.name`),
          arguments: JSON.stringify(objectAt(block.input, `${where}.input`)),
        },
      });
    } else refuse(`${where}.type`, `Chat Completions has no equivalent for a ${shown(block.type)} block`);
  });
  const out: Msg = { role: 'assistant', content: text };
  if (calls.length > 0) out.tool_calls = calls;
  return out;
}

function tool(value: unknown, at: string): Msg {
  const t = objectAt(value, at);
  if (t.type !== undefined && t.type !== 'custom')
    refuse(`${at}.type`, `server tools (${shown(t.type)}) run at Anthropic and have no Chat Completions equivalent`);
  onlyKnown(t, new Set(['type', 'name', 'description', 'input_schema', 'cache_control']), at);
  const fn: Msg = { name: stringAt(t.name, `${at}.name`) };
  if (t.description !== undefined) fn.description = stringAt(t.description, `${at}.description`);
  fn.parameters = objectAt(t.input_schema, `${at}.input_schema`);
  return { type: 'function', function: fn };
}

function toolChoice(value: unknown): Msg {
  const choice = objectAt(value, 'tool_choice');
  onlyKnown(choice, new Set(['type', 'name', 'disable_parallel_tool_use']), 'tool_choice');
  const out: Msg = {};
  if (choice.type === 'auto') out.tool_choice = 'auto';
  else if (choice.type === 'any') out.tool_choice = 'required';
  else if (choice.type === 'none') out.tool_choice = 'none';
  else if (choice.type === 'tool')
    out.tool_choice = { type: 'function', function: { name: stringAt(choice.name, 'tool_choice.name') } };
  else refuse('tool_choice.type', `auto, any, tool or none is required, got ${shown(choice.type)}`);
  if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  else if (choice.disable_parallel_tool_use !== undefined && choice.disable_parallel_tool_use !== false)
    refuse(
      'tool_choice.disable_parallel_tool_use',
      `a boolean is required, got ${shown(choice.disable_parallel_tool_use)}`,
    );
  return out;
}
