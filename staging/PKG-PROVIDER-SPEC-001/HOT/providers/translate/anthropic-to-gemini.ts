// An Anthropic Messages request as a Gemini generateContent request: every field mapped exactly, or refused by name.
// messages[i] becomes contents[i] and its blocks the parts, in order. The model goes in the path, streaming in the
// method (the gateway picks them); the body carries neither.
import type { JsonObject } from '../json.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';
import { messagesFields } from './messages-fields.js';

type Msg = Record<string, unknown>;

const TOP = messagesFields('top_k', 'cache_control');

/** Gemini takes at most five stop sequences. */
export const GEMINI_MAX_STOP = 5;

/**
 * A tool call id the gateway made up for a Gemini function call that had none (replies.ts): Gemini never saw it,
 * so it is not sent back.
 */
export const SYNTHETIC_CALL_ID = /^toolu_gemini_/;

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

export function anthropicRequestToGemini(body: JsonObject): Record<string, unknown> {
  onlyKnown(body, TOP, '');
  const out: Record<string, unknown> = {};
  if (body.system !== undefined) out.systemInstruction = { parts: systemParts(body.system) };
  const names = new Map<string, string>();
  out.contents = arrayAt(body.messages, 'messages').map((m, i) => turn(m, `messages[${i}]`, names));
  const config: Msg = { maxOutputTokens: body.max_tokens };
  if (body.stop_sequences !== undefined) {
    const stops = arrayAt(body.stop_sequences, 'stop_sequences');
    if (stops.length > GEMINI_MAX_STOP)
      refuse('stop_sequences', `Gemini takes at most ${GEMINI_MAX_STOP} stop sequences, got ${stops.length}`);
    config.stopSequences = stops.map((s, i) => stringAt(s, `stop_sequences[${i}]`));
  }
  if (body.temperature !== undefined) config.temperature = body.temperature;
  if (body.top_p !== undefined) config.topP = body.top_p;
  if (body.top_k !== undefined) config.topK = body.top_k;
  out.generationConfig = config;
  if (body.tools !== undefined) out.tools = [{ functionDeclarations: arrayAt(body.tools, 'tools').map(declaration) }];
  if (body.tool_choice !== undefined) out.toolConfig = { functionCallingConfig: callingConfig(body.tool_choice) };
  if (body.metadata !== undefined) {
    // The end user's id is Anthropic's abuse signal: Gemini has none, and the reply is the same without it.
    const metadata = objectAt(body.metadata, 'metadata');
    onlyKnown(metadata, new Set(['user_id']), 'metadata');
  }
  if (body.thinking !== undefined && objectAt(body.thinking, 'thinking').type !== 'disabled')
    refuse('thinking', 'Gemini thoughts carry no signature Messages can replay (extended thinking has no equivalent)');
  return out;
}

function systemParts(system: unknown): Msg[] {
  if (typeof system === 'string') return [{ text: system }];
  return arrayAt(system, 'system').map((b, i) => {
    const block = objectAt(b, `system[${i}]`);
    onlyKnown(block, new Set(['type', 'text', 'cache_control']), `system[${i}]`);
    if (block.type !== 'text')
      refuse(`system[${i}].type`, `only text system blocks translate, got ${shown(block.type)}`);
    return { text: stringAt(block.text, `system[${i}].text`) };
  });
}

function turn(value: unknown, at: string, names: Map<string, string>): Msg {
  const message = objectAt(value, at);
  onlyKnown(message, new Set(['role', 'content']), at);
  const { role, content } = message;
  if (role !== 'user' && role !== 'assistant')
    refuse(`${at}.role`, `user or assistant is required, got ${shown(role)}`);
  const geminiRole = role === 'assistant' ? 'model' : 'user';
  if (typeof content === 'string') return { role: geminiRole, parts: [{ text: content }] };
  const blocks = arrayAt(content, `${at}.content`);
  if (blocks.length === 0) refuse(`${at}.content`, 'an empty content array has no Gemini equivalent');
  const parts = blocks.map((b, j) => part(objectAt(b, `${at}.content[${j}]`), `${at}.content[${j}]`, role, names));
  return { role: geminiRole, parts };
}

function part(block: JsonObject, at: string, role: string, names: Map<string, string>): Msg {
  if (block.type === 'text') {
    onlyKnown(block, new Set(['type', 'text', 'cache_control', 'citations']), at);
    if (block.citations !== undefined && block.citations !== null) refuse(`${at}.citations`, 'Gemini has no citations');
    return { text: stringAt(block.text, `${at}.text`) };
  }
  if (block.type === 'image' && role === 'user') {
    onlyKnown(block, new Set(['type', 'source', 'cache_control']), at);
    const source = objectAt(block.source, `${at}.source`);
    if (source.type !== 'base64')
      refuse(`${at}.source.type`, `base64 images translate (Gemini fetches no URL), got ${shown(source.type)}`);
    onlyKnown(source, new Set(['type', 'media_type', 'data']), `${at}.source`);
    const media = stringAt(source.media_type, `${at}.source.media_type`);
    if (!IMAGE_TYPES.has(media)) refuse(`${at}.source.media_type`, `an image type is required, got ${shown(media)}`);
    return { inlineData: { mimeType: media, data: stringAt(source.data, `${at}.source.data`) } };
  }
  if (block.type === 'tool_use' && role === 'assistant') {
    onlyKnown(block, new Set(['type', 'id', 'name', 'input', 'cache_control']), at);
    const id = stringAt(block.id, `${at}.id`);
    const name = stringAt(block.name, `${at}.name`);
    names.set(id, name);
    const call: Msg = { name, args: objectAt(block.input, `${at}.input`) };
    return { functionCall: SYNTHETIC_CALL_ID.test(id) ? call : { id, ...call } };
  }
  if (block.type === 'tool_result' && role === 'user') return { functionResponse: functionResponse(block, at, names) };
  return refuse(`${at}.type`, `Gemini has no equivalent for a ${role} ${shown(block.type)} block`);
}

/**
 * A tool result as Gemini's functionResponse, by its convention: `{output: text}`, or `{error: text}` for a failed
 * tool (`is_error`). Gemini names the function a response answers: the name of the tool_use with that id.
 */
function functionResponse(block: JsonObject, at: string, names: Map<string, string>): Msg {
  onlyKnown(block, new Set(['type', 'tool_use_id', 'content', 'is_error', 'cache_control']), at);
  const id = stringAt(block.tool_use_id, `${at}.tool_use_id`);
  const name = names.get(id) ?? refuse(`${at}.tool_use_id`, `no earlier tool_use has the id ${shown(id)}`);
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    refuse(`${at}.is_error`, `a boolean is required, got ${shown(block.is_error)}`);
  const { content } = block;
  let text = '';
  if (typeof content === 'string') text = content;
  else if (content !== undefined)
    text = arrayAt(content, `${at}.content`)
      .map((c, k) => {
        const piece = objectAt(c, `${at}.content[${k}]`);
        if (piece.type !== 'text')
          refuse(`${at}.content[${k}].type`, `a Gemini function response holds text only, got ${shown(piece.type)}`);
        onlyKnown(piece, new Set(['type', 'text', 'cache_control']), `${at}.content[${k}]`);
        return stringAt(piece.text, `${at}.content[${k}].text`);
      })
      .join('');
  const response = block.is_error === true ? { error: text } : { output: text };
  return SYNTHETIC_CALL_ID.test(id) ? { name, response } : { id, name, response };
}

function declaration(value: unknown, i: number): Msg {
  const at = `tools[${i}]`;
  const t = objectAt(value, at);
  if (t.type !== undefined && t.type !== 'custom')
    refuse(`${at}.type`, `server tools (${shown(t.type)}) run at Anthropic and have no Gemini equivalent`);
  onlyKnown(t, new Set(['type', 'name', 'description', 'input_schema', 'cache_control']), at);
  const fn: Msg = { name: stringAt(t.name, `${at}.name`) };
  if (t.description !== undefined) fn.description = stringAt(t.description, `${at}.description`);
  // JSON Schema as it is: Gemini's parametersJsonSchema takes it whole (its `parameters` is an OpenAPI subset).
  fn.parametersJsonSchema = objectAt(t.input_schema, `${at}.input_schema`);
  return fn;
}

function callingConfig(value: unknown): Msg {
  const choice = objectAt(value, 'tool_choice');
  onlyKnown(choice, new Set(['type', 'name', 'disable_parallel_tool_use']), 'tool_choice');
  if (choice.disable_parallel_tool_use === true)
    refuse('tool_choice.disable_parallel_tool_use', 'Gemini cannot be kept to one function call per turn');
  if (choice.type === 'auto') return { mode: 'AUTO' };
  if (choice.type === 'any') return { mode: 'ANY' };
  if (choice.type === 'none') return { mode: 'NONE' };
  if (choice.type === 'tool') return { mode: 'ANY', allowedFunctionNames: [stringAt(choice.name, 'tool_choice.name')] };
  return refuse('tool_choice.type', `auto, any, tool or none is required, got ${shown(choice.type)}`);
}
