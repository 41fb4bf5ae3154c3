// A Responses request's `input` as a Messages conversation: message items become turns, function_call items
// tool_use blocks of the assistant turn they follow, function_call_output items tool_result blocks of one user turn.
import type { JsonObject } from '../json.js';
import { imageUrlSource, TOOL_ID } from './chat-to-anthropic.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';

type Msg = Record<string, unknown>;
type Block = Record<string, unknown>;

/** Keys an item may carry that say nothing to the model: its id and status as an earlier reply gave them. */
const ITEM_IDENTITY = ['type', 'id', 'status'] as const;

/** Leading system/developer messages (joined) and the turns after them. */
export function responsesConversation(input: unknown): { system: string | null; messages: Msg[] } {
  if (typeof input === 'string') return { system: null, messages: [{ role: 'user', content: input }] };
  const system: string[] = [];
  const messages: Msg[] = [];
  arrayAt(input, 'input').forEach((value, i) => {
    const at = `input[${i}]`;
    const item = objectAt(value, at);
    const type = item.type ?? 'message';
    if (type === 'message') message(item, at, system, messages);
    else if (type === 'function_call') assistantTurn(messages).push(functionCall(item, at));
    else if (type === 'function_call_output') resultTurn(messages).push(functionResult(item, at));
    else if (type === 'reasoning')
      refuse(`${at}.type`, "OpenAI's reasoning items (encrypted or summarised) have no Anthropic Messages equivalent");
    else refuse(`${at}.type`, `a ${shown(type)} item has no Anthropic Messages equivalent`);
  });
  return { system: system.length === 0 ? null : system.join('\n\n'), messages };
}

function message(item: JsonObject, at: string, system: string[], messages: Msg[]): void {
  onlyKnown(item, new Set([...ITEM_IDENTITY, 'role', 'content']), at);
  const { role } = item;
  if (role === 'system' || role === 'developer') {
    if (messages.length > 0)
      refuse(`${at}.role`, 'a system or developer message after the conversation began has no place in Messages');
    system.push(textOf(item.content, `${at}.content`));
  } else if (role === 'user') messages.push({ role: 'user', content: userContent(item.content, `${at}.content`) });
  else if (role === 'assistant') {
    const text = textOf(item.content, `${at}.content`);
    if (text !== '') assistantTurn(messages).push({ type: 'text', text });
  } else refuse(`${at}.role`, `system, developer, user or assistant translate, got ${shown(role)}`);
}

/** The assistant turn an assistant item joins: the last turn when it is the assistant's, else a new one. */
function assistantTurn(messages: Msg[]): Block[] {
  const last = messages.at(-1);
  if (last?.role === 'assistant') return last.content as Block[];
  const content: Block[] = [];
  messages.push({ role: 'assistant', content });
  return content;
}

/** Results of one assistant turn's calls travel together, in one user turn, as Messages requires. */
function resultTurn(messages: Msg[]): Block[] {
  const last = messages.at(-1);
  if (last?.role === 'user' && Array.isArray(last.content) && last.content.every((b) => b.type === 'tool_result'))
    return last.content as Block[];
  const content: Block[] = [];
  messages.push({ role: 'user', content });
  return content;
}

/** Text content: a string, or input_text / output_text parts joined (system, assistant). */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  return arrayAt(content, at)
    .map((p, k) => {
      const where = `${at}[${k}]`;
      const part = objectAt(p, where);
      if (part.type === 'input_text') onlyKnown(part, new Set(['type', 'text']), where);
      else if (part.type === 'output_text') {
        onlyKnown(part, new Set(['type', 'text', 'annotations', 'logprobs']), where);
        for (const key of ['annotations', 'logprobs'] as const)
          if (part[key] !== undefined && arrayAt(part[key], `${where}.${key}`).length > 0)
            refuse(`${where}.${key}`, 'Anthropic Messages has no equivalent for these');
      } else refuse(`${where}.type`, `only text parts translate here, got ${shown(part.type)}`);
      return stringAt(part.text, `${where}.text`);
    })
    .join('');
}

/** A user's content (or a function's output): text and images. */
function userContent(content: unknown, at: string): string | Block[] {
  if (typeof content === 'string') return content;
  return arrayAt(content, at).map((p, k) => {
    const where = `${at}[${k}]`;
    const part = objectAt(p, where);
    if (part.type === 'input_text') {
      onlyKnown(part, new Set(['type', 'text']), where);
      return { type: 'text', text: stringAt(part.text, `${where}.text`) };
    }
    if (part.type === 'input_image') return { type: 'image', source: image(part, where) };
    return refuse(`${where}.type`, `Anthropic Messages has no equivalent for a ${shown(part.type)} part`);
  });
}

function image(part: JsonObject, at: string): Block {
  onlyKnown(part, new Set(['type', 'image_url', 'detail', 'file_id']), at);
  if (part.file_id !== undefined && part.file_id !== null)
    refuse(`${at}.file_id`, 'an OpenAI file id names nothing Anthropic can read: send the image as image_url');
  if (part.detail !== undefined && part.detail !== null && part.detail !== 'auto')
    refuse(`${at}.detail`, `Anthropic has no image detail setting, got ${shown(part.detail)}`);
  return imageUrlSource(stringAt(part.image_url, `${at}.image_url`), `${at}.image_url`);
}

function callId(item: JsonObject, at: string): string {
  const id = stringAt(item.call_id, `${at}.call_id`);
  if (!TOOL_ID.test(id)) refuse(`${at}.call_id`, `Anthropic tool ids are [a-zA-Z0-9_-], got ${shown(id)}`);
  return id;
}

function functionCall(item: JsonObject, at: string): Block {
  onlyKnown(item, new Set([...ITEM_IDENTITY, 'call_id', 'name', 'arguments']), at);
  const args = stringAt(item.arguments, `${at}.arguments`);
  return {
    type: 'tool_use',
    id: callId(item, at),
    name: stringAt(item.name, `${at}.name`),
    input: argumentsObject(args, `${at}.arguments`),
  };
}

/** Anthropic takes a tool input as a JSON object: the call's arguments must be one (empty means none). */
function argumentsObject(args: string, at: string): JsonObject {
  let input: unknown;
  try {
    input = args.trim() === '' ? {} : JSON.parse(args);
  } catch {
    return refuse(at, 'Anthropic takes a tool input as a JSON object; these arguments are not JSON');
  }
  return objectAt(input, at);
}

function functionResult(item: JsonObject, at: string): Block {
  onlyKnown(item, new Set([...ITEM_IDENTITY, 'call_id', 'output']), at);
  return { type: 'tool_result', tool_use_id: callId(item, at), content: userContent(item.output, `${at}.output`) };
}
