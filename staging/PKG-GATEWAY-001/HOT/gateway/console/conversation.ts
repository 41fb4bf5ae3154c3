/**
 * A recorded prompt as a conversation: role-labelled messages, tool definitions, tool calls and tool results,
 * read from the request body's JSON in any of the shapes the gateway records (Anthropic Messages, Chat
 * Completions, Responses, Gemini `contents`). The console draws these with text nodes; nothing here is markup.
 * A prompt that is not such JSON gives null, and the console shows its raw pieces instead.
 */
export type Part =
  | { kind: 'text'; text: string }
  | { kind: 'tool_call'; id: string | null; name: string; input: string }
  | { kind: 'tool_result'; id: string | null; is_error: boolean; parts: Part[] }
  /** Anything else (an image, a thinking block, a part of a shape not known here) as its JSON. */
  | { kind: 'data'; label: string; text: string };

export type Item =
  | { kind: 'message'; role: string; parts: Part[] }
  | { kind: 'system'; parts: Part[] }
  | { kind: 'tool'; name: string; description: string; schema: string }
  /** A request field that is not the conversation (model, max_tokens, stream…), as its JSON. */
  | { kind: 'setting'; name: string; value: string };

const MESSAGE_FIELDS = new Set(['messages', 'contents', 'input']);
const SYSTEM_FIELDS = new Set(['system', 'instructions', 'systemInstruction', 'system_instruction']);

/** The conversation a whole prompt holds; null when it is not a JSON object. */
export function conversationOf(prompt: string): Item[] | null {
  let body: unknown;
  try {
    body = JSON.parse(prompt);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const items: Item[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (Array.isArray(value) && (MESSAGE_FIELDS.has(key) || SYSTEM_FIELDS.has(key) || key === 'tools'))
      for (const element of value) items.push(...itemsOf(key, element));
    else items.push(...itemsOf(key, value));
  }
  return items;
}

/**
 * The conversation of a turn's new pieces (`jsonPieces` in request-body.ts: each piece one field value or array
 * element, carrying the punctuation before it). A turn that continues the one before starts inside its array, so
 * the field is not named: its elements are read by their shape. Null when a piece is not of that form.
 */
export function conversationOfPieces(pieces: readonly string[], continues: boolean): Item[] | null {
  if (!continues) return conversationOf(pieces.join(''));
  const items: Item[] = [];
  const state: GlueState = { key: null, inArray: true, expectKey: false };
  for (const piece of pieces) {
    const at = skipGlue(piece, state);
    if (at === -1) return null;
    const rest = piece.slice(at);
    if (rest === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(rest);
    } catch {
      return null;
    }
    items.push(...(state.key === null ? itemsByShape(value) : itemsOf(state.key, value)));
    if (!state.inArray) state.expectKey = true;
  }
  return items;
}

interface GlueState {
  key: string | null;
  inArray: boolean;
  /** After a field's value outside an array the next token is a key, never a value. */
  expectKey: boolean;
}

/** Consumes a piece's leading punctuation and keys; returns where its value starts (the piece's end if none). */
function skipGlue(piece: string, state: GlueState): number {
  let i = 0;
  while (i < piece.length) {
    const c = piece[i] as string;
    if (c === '{' && i === 0 && state.key === null && !state.inArray) i += 1;
    else if (c === ']' && state.inArray) {
      state.inArray = false;
      state.expectKey = true;
      i += 1;
    } else if (c === '}' && !state.inArray) i += 1;
    else if (c === ',') i += 1;
    else if (c === '"' && (state.expectKey || !state.inArray)) {
      const end = stringEnd(piece, i);
      if (end === -1 || piece[end] !== ':') return state.expectKey ? -1 : i;
      state.key = JSON.parse(piece.slice(i, end)) as string;
      state.expectKey = false;
      i = end + 1;
      if (piece[i] === '[') {
        state.inArray = true;
        i += 1;
        if (piece[i] !== ']') return i;
      } else return i;
    } else return i;
  }
  return i;
}

/** The index after a JSON string starting at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === '"') return i + 1;
  }
  return -1;
}

function itemsOf(key: string, value: unknown): Item[] {
  if (MESSAGE_FIELDS.has(key)) {
    if (typeof value === 'string') return [{ kind: 'message', role: 'user', parts: [{ kind: 'text', text: value }] }];
    return itemsByShape(value);
  }
  if (SYSTEM_FIELDS.has(key)) {
    const v = value as { parts?: unknown };
    const parts = typeof value === 'object' && value !== null && Array.isArray(v.parts) ? v.parts : [value];
    return [{ kind: 'system', parts: parts.map(partOf) }];
  }
  if (key === 'tools') return toolsOf(value);
  return [{ kind: 'setting', name: key, value: json(value) }];
}

/** A conversation element read by its shape (a message of any of the four families, or a Responses item). */
function itemsByShape(value: unknown): Item[] {
  if (typeof value !== 'object' || value === null)
    return [{ kind: 'message', role: 'unknown', parts: [partOf(value)] }];
  const v = value as Record<string, unknown>;
  if (v.type === 'function_call' || v.type === 'function_call_output')
    return [{ kind: 'message', role: v.type === 'function_call' ? 'assistant' : 'tool', parts: [partOf(v)] }];
  if (typeof v.role !== 'string')
    return typeof v.name === 'string' ? toolsOf(v) : [{ kind: 'message', role: 'unknown', parts: [partOf(v)] }];
  const parts: Part[] = [];
  const content = Array.isArray(v.content) ? v.content : Array.isArray(v.parts) ? v.parts : [v.content];
  for (const p of content) if (p !== null && p !== undefined && p !== '') parts.push(partOf(p));
  if (Array.isArray(v.tool_calls)) for (const call of v.tool_calls) parts.push(partOf(call));
  if (v.role === 'tool' && typeof v.tool_call_id === 'string')
    return [
      { kind: 'message', role: 'tool', parts: [{ kind: 'tool_result', id: v.tool_call_id, is_error: false, parts }] },
    ];
  return [{ kind: 'message', role: v.role, parts }];
}

function partOf(p: unknown): Part {
  if (typeof p === 'string') return { kind: 'text', text: p };
  if (typeof p !== 'object' || p === null) return { kind: 'data', label: 'value', text: json(p) };
  const b = p as Record<string, unknown>;
  const str = (x: unknown): string | null => (typeof x === 'string' ? x : null);
  if (typeof b.text === 'string' && (b.type === undefined || /text$/.test(String(b.type))))
    return { kind: 'text', text: b.text };
  if (b.type === 'tool_use')
    return { kind: 'tool_call', id: str(b.id), name: String(b.name ?? ''), input: pretty(b.input) };
  if (b.type === 'tool_result')
    return {
      kind: 'tool_result',
      id: str(b.tool_use_id),
      is_error: b.is_error === true,
      parts: (Array.isArray(b.content) ? b.content : [b.content ?? '']).map(partOf),
    };
  if (b.type === 'function' && typeof b.function === 'object' && b.function !== null) {
    const f = b.function as Record<string, unknown>;
    return { kind: 'tool_call', id: str(b.id), name: String(f.name ?? ''), input: argumentsText(f.arguments) };
  }
  if (b.type === 'function_call')
    return { kind: 'tool_call', id: str(b.call_id), name: String(b.name ?? ''), input: argumentsText(b.arguments) };
  if (b.type === 'function_call_output')
    return { kind: 'tool_result', id: str(b.call_id), is_error: false, parts: [partOf(b.output ?? '')] };
  const call = b.functionCall as Record<string, unknown> | undefined;
  if (typeof call === 'object' && call !== null)
    return { kind: 'tool_call', id: str(call.id), name: String(call.name ?? ''), input: pretty(call.args) };
  const answer = b.functionResponse as Record<string, unknown> | undefined;
  if (typeof answer === 'object' && answer !== null)
    return {
      kind: 'tool_result',
      id: str(answer.id) ?? str(answer.name),
      is_error: false,
      parts: [{ kind: 'data', label: 'response', text: pretty(answer.response) }],
    };
  return { kind: 'data', label: typeof b.type === 'string' ? b.type : 'block', text: pretty(b) };
}

/** Tool definitions: Anthropic `{name, input_schema}`, Chat `{type: function, function}`, Responses, Gemini. */
function toolsOf(value: unknown): Item[] {
  if (typeof value !== 'object' || value === null) return [{ kind: 'setting', name: 'tools', value: json(value) }];
  const t = value as Record<string, unknown>;
  if (Array.isArray(t.functionDeclarations) || Array.isArray(t.function_declarations))
    return ((t.functionDeclarations ?? t.function_declarations) as unknown[]).flatMap(toolsOf);
  const f = (typeof t.function === 'object' && t.function !== null ? t.function : t) as Record<string, unknown>;
  const name = typeof f.name === 'string' ? f.name : typeof t.type === 'string' ? t.type : 'tool';
  return [
    { kind: 'tool', name, description: typeof f.description === 'string' ? f.description : '', schema: pretty(t) },
  ];
}

function argumentsText(args: unknown): string {
  if (typeof args !== 'string') return pretty(args);
  try {
    return pretty(JSON.parse(args));
  } catch {
    return args;
  }
}

const json = (value: unknown): string => JSON.stringify(value) ?? 'null';
const pretty = (value: unknown): string => JSON.stringify(value, null, 2) ?? 'null';
