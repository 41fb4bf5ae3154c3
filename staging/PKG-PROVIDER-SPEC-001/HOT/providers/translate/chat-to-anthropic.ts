// A Chat Completions request as an Anthropic Messages request: every field mapped exactly, or refused by name.
import type { JsonObject } from '../json.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';

type Msg = Record<string, unknown>;

/** Fields whose neutral value is accepted (it asks for nothing Messages would do differently); any other is refused. */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  n: (v) => v === 1 || v === null,
  logprobs: (v) => v === false || v === null,
  presence_penalty: (v) => v === 0 || v === null,
  frequency_penalty: (v) => v === 0 || v === null,
  response_format: (v) => typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'text',
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
  store: (v) => v === false || v === null,
  parallel_tool_calls: (v) => typeof v === 'boolean',
  stream_options: (v) => typeof v === 'object' && v !== null,
};

const TOP = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'stream',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'user',
  ...Object.keys(NEUTRAL),
]);

/** Anthropic's tool_use ids: what a chat client's tool_call_id must look like to be sent on. */
export const TOOL_ID = /^[a-zA-Z0-9_-]{1,200}$/;

/** The Messages body for a Chat Completions body (already checked by the gateway: model, output limits, messages). */
export function chatRequestToAnthropic(body: JsonObject): Record<string, unknown> {
  for (const key of Object.keys(body)) {
    if (!TOP.has(key)) refuse(key, 'Anthropic Messages has no equivalent for this field');
    const neutral = NEUTRAL[key];
    if (neutral !== undefined && body[key] !== undefined && !neutral(body[key]))
      refuse(key, `Anthropic Messages cannot honour ${shown(body[key])} (only the default translates)`);
  }
  const out: Record<string, unknown> = { model: body.model };
  const limit = body.max_completion_tokens ?? body.max_tokens;
  if (limit === undefined || limit === null)
    refuse('max_completion_tokens', 'Anthropic Messages requires an output limit: set max_completion_tokens');
  out.max_tokens = limit;
  const { system, messages } = conversation(arrayAt(body.messages, 'messages'));
  if (system !== null) out.system = system;
  out.messages = messages;
  if (body.stop !== undefined && body.stop !== null)
    out.stop_sequences =
      typeof body.stop === 'string' ? [body.stop] : arrayAt(body.stop, 'stop').map((s, i) => stringAt(s, `stop[${i}]`));
  if (typeof body.temperature === 'number' && body.temperature > 1)
    refuse('temperature', `Anthropic takes 0 to 1, got ${body.temperature}`);
  for (const key of ['temperature', 'top_p'] as const)
    if (body[key] !== undefined && body[key] !== null) out[key] = body[key];
  if (body.tools !== undefined) out.tools = arrayAt(body.tools, 'tools').map((t, i) => tool(t, `tools[${i}]`));
  const choice = body.tool_choice === undefined ? null : toolChoice(body.tool_choice);
  if (body.parallel_tool_calls === false)
    Object.assign(out, { tool_choice: { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true } });
  else if (choice !== null) out.tool_choice = choice;
  if (body.user !== undefined && body.user !== null) out.metadata = { user_id: stringAt(body.user, 'user') };
  if (body.stream === true) out.stream = true;
  return out;
}

/** Leading system/developer messages become `system`; tool messages become tool_result blocks in a user turn. */
function conversation(list: unknown[]): { system: string | null; messages: Msg[] } {
  const system: string[] = [];
  const messages: Msg[] = [];
  list.forEach((m, i) => {
    const at = `messages[${i}]`;
    const message = objectAt(m, at);
    const { role } = message;
    if (role === 'system' || role === 'developer') {
      if (messages.length > 0)
        refuse(`${at}.role`, 'a system message after the conversation began has no place in Messages');
      onlyKnown(message, new Set(['role', 'content']), at);
      system.push(textOf(message.content, `${at}.content`));
    } else if (role === 'user') {
      onlyKnown(message, new Set(['role', 'content']), at);
      messages.push({ role: 'user', content: userContent(message.content, `${at}.content`) });
    } else if (role === 'assistant') messages.push(assistant(message, at));
    else if (role === 'tool') {
      onlyKnown(message, new Set(['role', 'content', 'tool_call_id']), at);
      const id = stringAt(message.tool_call_id, `${at}.tool_call_id`);
      if (!TOOL_ID.test(id)) refuse(`${at}.tool_call_id`, `Anthropic tool ids are [a-zA-Z0-9_-], got ${shown(id)}`);
      const block = { type: 'tool_result', tool_use_id: id, content: textOf(message.content, `${at}.content`) };
      const last = messages.at(-1);
      // Results of one assistant turn's calls travel together, in one user turn, as Messages requires.
      if (last?.role === 'user' && Array.isArray(last.content) && last.content.every((b) => b.type === 'tool_result'))
        (last.content as Msg[]).push(block);
      else messages.push({ role: 'user', content: [block] });
    } else refuse(`${at}.role`, `system, developer, user, assistant or tool translate, got ${shown(role)}`);
  });
  return { system: system.length === 0 ? null : system.join('\n\n'), messages };
}

/** A string, or text parts joined (system, tool and refusal-free assistant content). */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  return arrayAt(content, at)
    .map((p, k) => {
      const part = objectAt(p, `${at}[${k}]`);
      if (part.type !== 'text') refuse(`${at}[${k}].type`, `only text parts translate here, got ${shown(part.type)}`);
      onlyKnown(part, new Set(['type', 'text']), `${at}[${k}]`);
      return stringAt(part.text, `${at}[${k}].text`);
    })
    .join('');
}

function userContent(content: unknown, at: string): string | Msg[] {
  if (typeof content === 'string') return content;
  return arrayAt(content, at).map((p, k) => {
    const where = `${at}[${k}]`;
    const part = objectAt(p, where);
    if (part.type === 'text') {
      onlyKnown(part, new Set(['type', 'text']), where);
      return { type: 'text', text: stringAt(part.text, `${where}.text`) };
    }
    if (part.type === 'image_url') {
      onlyKnown(part, new Set(['type', 'image_url']), where);
      return { type: 'image', source: imageSource(part.image_url, `${where}.image_url`) };
    }
    return refuse(`${where}.type`, `Anthropic Messages has no equivalent for a ${shown(part.type)} part`);
  });
}

const DATA_URL = /^data:(image\/(?:jpeg|png|gif|webp));base64,([A-Za-z0-9+/=\r\n]*)$/;

function imageSource(value: unknown, at: string): Msg {
  const image = objectAt(value, at);
  onlyKnown(image, new Set(['url', 'detail']), at);
  if (image.detail !== undefined && image.detail !== 'auto')
    refuse(`${at}.detail`, `Anthropic has no image detail setting, got ${shown(image.detail)}`);
  return imageUrlSource(stringAt(image.url, `${at}.url`), `${at}.url`);
}

/** An image URL (a base64 data URL or an http(s) one) as Anthropic's image source; `at` names the URL's field. */
export function imageUrlSource(url: string, at: string): Msg {
  if (url.startsWith('data:')) {
    const match = DATA_URL.exec(url);
    if (match === null) refuse(at, 'a base64 data URL of a jpeg, png, gif or webp image is required');
    return { type: 'base64', media_type: match[1], data: match[2] };
  }
  if (!/^https?:\/\//.test(url)) refuse(at, `an http(s) or data: URL is required, got ${shown(url)}`);
  return { type: 'url', url };
}

function assistant(message: JsonObject, at: string): Msg {
  onlyKnown(message, new Set(['role', 'content', 'tool_calls', 'refusal']), at);
  if (message.refusal !== undefined && message.refusal !== null)
    refuse(`${at}.refusal`, 'Messages has no refusal text');
  const blocks: Msg[] = [];
  if (message.content !== undefined && message.content !== null) {
    const text = textOf(message.content, `${at}.content`);
    if (text !== '') blocks.push({ type: 'text', text });
  }
  if (message.tool_calls !== undefined && message.tool_calls !== null)
    arrayAt(message.tool_calls, `${at}.tool_calls`).forEach((c, k) => {
      blocks.push(toolUse(c, `${at}.tool_calls[${k}]`));
    });
  return { role: 'assistant', content: blocks };
}

function toolUse(value: unknown, at: string): Msg {
  const call = objectAt(value, at);
  onlyKnown(call, new Set(['id', 'type', 'function']), at);
  if (call.type !== 'function') refuse(`${at}.type`, `function tool calls translate, got ${shown(call.type)}`);
  const id = stringAt(call.id, `${at}.id`);
  if (!TOOL_ID.test(id)) refuse(`${at}.id`, `Anthropic tool ids are [a-zA-Z0-9_-], got ${shown(id)}`);
  const fn = objectAt(call.function, `${at}.function`);
  onlyKnown(fn, new Set(['name', 'arguments']), `${at}.function`);
  const args = stringAt(fn.arguments, `${at}.function.arguments`);
  let input: unknown;
  try {
    input = args.trim() === '' ? {} : JSON.parse(args);
  } catch {
    return refuse(
      `${at}.function.arguments`,
      'Anthropic takes a tool input as a JSON object; these arguments are not JSON',
    );
  }
  return {
    type: 'tool_use',
    id,
    name: stringAt(fn.name, `${at}.function.name`),
    input: objectAt(input, `${at}.function.arguments`),
  };
}

function tool(value: unknown, at: string): Msg {
  const t = objectAt(value, at);
  onlyKnown(t, new Set(['type', 'function']), at);
  if (t.type !== 'function') refuse(`${at}.type`, `function tools translate, got ${shown(t.type)}`);
  const fn = objectAt(t.function, `${at}.function`);
  onlyKnown(fn, new Set(['name', 'description', 'parameters', 'strict']), `${at}.function`);
  if (fn.strict === true) refuse(`${at}.function.strict`, 'Anthropic Messages has no strict schema adherence');
  const out: Msg = { name: stringAt(fn.name, `${at}.function.name`) };
  if (fn.description !== undefined) out.description = stringAt(fn.description, `${at}.function.description`);
  // A function without parameters takes none: the empty object schema says exactly that.
  out.input_schema =
    fn.parameters === undefined
      ? { type: 'object', properties: {} }
      : objectAt(fn.parameters, `${at}.function.parameters`);
  return out;
}

function toolChoice(value: unknown): Msg {
  if (value === 'auto') return { type: 'auto' };
  if (value === 'none') return { type: 'none' };
  if (value === 'required') return { type: 'any' };
  const choice = objectAt(value, 'tool_choice');
  onlyKnown(choice, new Set(['type', 'function']), 'tool_choice');
  if (choice.type !== 'function') refuse('tool_choice.type', `function is required, got ${shown(choice.type)}`);
  const fn = objectAt(choice.function, 'tool_choice.function');
  return { type: 'tool', name: stringAt(fn.name, 'tool_choice.function.name') };
}
