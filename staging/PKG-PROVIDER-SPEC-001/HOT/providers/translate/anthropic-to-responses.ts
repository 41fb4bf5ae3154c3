// An Anthropic Messages request as an OpenAI Responses request (POST /v1/responses): every field mapped exactly, or
// refused by name. The system prompt becomes `instructions`; each turn becomes input items in order: a message item
// per run of text and images, a `function_call` per tool_use and a `function_call_output` per tool_result, the call
// ids kept as they are.
import type { JsonObject } from '../json.js';
import { failedToolText, imageUrl, metadataUser, systemText } from './anthropic-to-chat.js';
import { messagesFields } from './messages-fields.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';

type Item = Record<string, unknown>;

// A caching hint: OpenAI caches prompt prefixes on its own, and the reply is the same either way.
const TOP = messagesFields('cache_control', 'output_config');

/** The effort levels Messages' `output_config.effort` and the Responses API's `reasoning.effort` both name. */
const EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max']);

const TEXT_KEYS = new Set(['type', 'text', 'cache_control']);
const IMAGE_KEYS = new Set(['type', 'source', 'cache_control']);

/** The Responses body for a Messages body (already checked by the gateway: model, max_tokens, messages). */
export function anthropicRequestToResponses(body: JsonObject): Record<string, unknown> {
  onlyKnown(body, TOP, '');
  if (body.stop_sequences !== undefined)
    refuse('stop_sequences', 'the Responses API has no stop sequences (no field stops the output at a string)');
  const out: Record<string, unknown> = { model: body.model };
  if (body.system !== undefined) out.instructions = systemText(body.system);
  const input: Item[] = [];
  arrayAt(body.messages, 'messages').forEach((m, i) => {
    turn(m, `messages[${i}]`, input);
  });
  out.input = input;
  out.max_output_tokens = body.max_tokens;
  for (const key of ['temperature', 'top_p'] as const) if (body[key] !== undefined) out[key] = body[key];
  if (body.tools !== undefined) out.tools = arrayAt(body.tools, 'tools').map((t, i) => tool(t, `tools[${i}]`));
  if (body.tool_choice !== undefined) Object.assign(out, toolChoice(body.tool_choice));
  // Anthropic's end-user id for abuse detection; OpenAI's field for the same purpose.
  const user = metadataUser(body);
  if (user !== undefined) out.safety_identifier = user;
  if (body.thinking !== undefined && objectAt(body.thinking, 'thinking').type !== 'disabled')
    refuse(
      'thinking',
      'a thinking budget has no exact Responses equivalent (reasoning takes an effort level, not a token budget)',
    );
  if (body.output_config !== undefined) {
    const config = objectAt(body.output_config, 'output_config');
    onlyKnown(config, new Set(['effort']), 'output_config');
    const { effort } = config;
    if (effort !== undefined && effort !== null) {
      if (typeof effort !== 'string' || !EFFORTS.has(effort))
        refuse('output_config.effort', `low, medium, high, xhigh or max is required, got ${shown(effort)}`);
      out.reasoning = { effort };
    }
  }
  if (body.stream === true) out.stream = true;
  // A Messages client keeps its own history and never names a stored response: nothing is kept at OpenAI.
  out.store = false;
  return out;
}

/** One Messages turn as input items, in the order of its blocks. */
function turn(value: unknown, at: string, input: Item[]): void {
  const message = objectAt(value, at);
  onlyKnown(message, new Set(['role', 'content']), at);
  const { role, content } = message;
  if (role !== 'user' && role !== 'assistant')
    refuse(`${at}.role`, `user or assistant is required, got ${shown(role)}`);
  if (typeof content === 'string') {
    input.push({ type: 'message', role, content });
    return;
  }
  const blocks = arrayAt(content, `${at}.content`);
  if (blocks.length === 0) refuse(`${at}.content`, 'an empty content array has no Responses equivalent');
  let parts: Item[] | null = null;
  blocks.forEach((b, j) => {
    const where = `${at}.content[${j}]`;
    const block = objectAt(b, where);
    const part = role === 'user' ? userPart(block, where) : assistantPart(block, where);
    if (part === null) {
      parts = null;
      input.push(role === 'user' ? functionCallOutput(block, where) : functionCall(block, where));
    } else if (parts === null) {
      parts = [part];
      input.push({ type: 'message', role, content: parts });
    } else parts.push(part);
  });
}

/** A user block as a message content part, or null for a tool_result (an item of its own). */
function userPart(block: JsonObject, at: string): Item | null {
  if (block.type === 'tool_result') return null;
  if (block.type === 'text') {
    onlyKnown(block, TEXT_KEYS, at);
    return { type: 'input_text', text: stringAt(block.text, `${at}.text`) };
  }
  if (block.type === 'image') {
    onlyKnown(block, IMAGE_KEYS, at);
    return inputImage(block, at);
  }
  return refuse(`${at}.type`, `the Responses API has no equivalent for a user ${shown(block.type)} block`);
}

// `auto` is the API's default detail: the image is read as it would be with no detail given.
const inputImage = (block: JsonObject, at: string): Item => ({
  type: 'input_image',
  image_url: imageUrl(block.source, `${at}.source`),
  detail: 'auto',
});

/** An assistant block as a message content part, or null for a tool_use (an item of its own). */
function assistantPart(block: JsonObject, at: string): Item | null {
  if (block.type === 'tool_use') return null;
  if (block.type === 'text') {
    onlyKnown(block, new Set([...TEXT_KEYS, 'citations']), at);
    if (block.citations !== undefined && block.citations !== null)
      refuse(`${at}.citations`, 'the Responses API takes no citations in an input message');
    return { type: 'output_text', text: stringAt(block.text, `${at}.text`) };
  }
  return refuse(`${at}.type`, `the Responses API has no equivalent for an assistant ${shown(block.type)} block`);
}

function functionCall(block: JsonObject, at: string): Item {
  onlyKnown(block, new Set(['type', 'id', 'name', 'input', 'cache_control']), at);
  return {
    type: 'function_call',
    call_id: stringAt(block.id, `${at}.id`),
    name: stringAt(block.name, `${at}.name`),
    arguments: JSON.stringify(objectAt(block.input, `${at}.input`)),
  };
}

/**
 * A tool result as a `function_call_output`: text as a string, text and images as the output's content list. The
 * output has no error flag: a failed tool's text says so behind the prefix the Chat translation uses.
 */
function functionCallOutput(block: JsonObject, at: string): Item {
  onlyKnown(block, new Set(['type', 'tool_use_id', 'content', 'is_error', 'cache_control']), at);
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    refuse(`${at}.is_error`, `a boolean is required, got ${shown(block.is_error)}`);
  const call_id = stringAt(block.tool_use_id, `${at}.tool_use_id`);
  const failed = block.is_error === true;
  const { content } = block;
  if (content === undefined || typeof content === 'string')
    return { type: 'function_call_output', call_id, output: failed ? failedToolText(content ?? '') : (content ?? '') };
  const pieces = arrayAt(content, `${at}.content`).map((c, k) => {
    const where = `${at}.content[${k}]`;
    const piece = objectAt(c, where);
    if (piece.type === 'text') {
      onlyKnown(piece, TEXT_KEYS, where);
      return { type: 'input_text', text: stringAt(piece.text, `${where}.text`) };
    }
    if (piece.type === 'image') {
      onlyKnown(piece, IMAGE_KEYS, where);
      return inputImage(piece, where);
    }
    return refuse(`${where}.type`, `a function call output holds text and images, got ${shown(piece.type)}`);
  });
  if (pieces.every((p) => p.type === 'input_text')) {
    const text = pieces.map((p) => p.text).join('');
    return { type: 'function_call_output', call_id, output: failed ? failedToolText(text) : text };
  }
  if (failed) refuse(`${at}.is_error`, 'a failed tool result with images has no Responses equivalent');
  return { type: 'function_call_output', call_id, output: pieces };
}

function tool(value: unknown, at: string): Item {
  const t = objectAt(value, at);
  if (t.type !== undefined && t.type !== 'custom')
    refuse(`${at}.type`, `server tools (${shown(t.type)}) run at Anthropic and have no Responses equivalent`);
  onlyKnown(t, new Set(['type', 'name', 'description', 'input_schema', 'cache_control']), at);
  const fn: Item = { type: 'function', name: stringAt(t.name, `${at}.name`) };
  if (t.description !== undefined) fn.description = stringAt(t.description, `${at}.description`);
  fn.parameters = objectAt(t.input_schema, `${at}.input_schema`);
  // Messages checks no schema strictly: strict mode would reject schemas Anthropic takes.
  fn.strict = false;
  return fn;
}

function toolChoice(value: unknown): Item {
  const choice = objectAt(value, 'tool_choice');
  onlyKnown(choice, new Set(['type', 'name', 'disable_parallel_tool_use']), 'tool_choice');
  const out: Item = {};
  if (choice.type === 'auto') out.tool_choice = 'auto';
  else if (choice.type === 'any') out.tool_choice = 'required';
  else if (choice.type === 'none') out.tool_choice = 'none';
  else if (choice.type === 'tool')
    out.tool_choice = { type: 'function', name: stringAt(choice.name, 'tool_choice.name') };
  else refuse('tool_choice.type', `auto, any, tool or none is required, got ${shown(choice.type)}`);
  if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  else if (choice.disable_parallel_tool_use !== undefined && choice.disable_parallel_tool_use !== false)
    refuse(
      'tool_choice.disable_parallel_tool_use',
      `a boolean is required, got ${shown(choice.disable_parallel_tool_use)}`,
    );
  return out;
}
