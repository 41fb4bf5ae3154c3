// A Gemini generateContent request as an Anthropic Messages request: every field mapped exactly, or refused by name.
// contents[i] becomes messages[i] and its parts[j] the block content[j], so a field of one names the other's.
import type { JsonObject } from '../json.js';
import { geminiSchemaToJson } from './gemini-schema.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';

type Msg = Record<string, unknown>;

/** What a Gemini body does not say and the target needs: the model (from the path), streaming (the method). */
export interface GeminiCall {
  model: string;
  stream: boolean;
  /** The output limit when the body sets none (the gateway's output bound, which its reservation holds). */
  defaultMaxTokens: number;
}

export interface GeminiToAnthropicOptions {
  /** The highest temperature the final target takes (Messages 1; Chat Completions, through Messages, 2). */
  maxTemperature: number;
}

const TOP = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'model']);

const CONFIG = new Set([
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'stopSequences',
  'candidateCount',
  'responseMimeType',
  'presencePenalty',
  'frequencyPenalty',
  'responseModalities',
  'thinkingConfig',
]);

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

export function geminiRequestToAnthropic(
  body: JsonObject,
  call: GeminiCall,
  options: GeminiToAnthropicOptions = { maxTemperature: 1 },
): Record<string, unknown> {
  onlyKnown(body, TOP, '');
  if (body.model !== undefined && body.model !== call.model && body.model !== `models/${call.model}`)
    refuse('model', `the path names ${shown(call.model)}, the body ${shown(body.model)}`);
  const out: Record<string, unknown> = { model: call.model };
  const config = body.generationConfig === undefined ? {} : objectAt(body.generationConfig, 'generationConfig');
  onlyKnown(config, CONFIG, 'generationConfig');
  out.max_tokens = config.maxOutputTokens ?? call.defaultMaxTokens;
  if (body.systemInstruction !== undefined) out.system = systemBlocks(body.systemInstruction);
  const names = new CallNames();
  out.messages = arrayAt(body.contents, 'contents').map((c, i) => turn(c, `contents[${i}]`, names));
  Object.assign(out, sampling(config, options));
  if (body.tools !== undefined) out.tools = tools(body.tools);
  if (body.toolConfig !== undefined) {
    const choice = toolChoice(body.toolConfig);
    if (choice !== null) out.tool_choice = choice;
  }
  if (call.stream) out.stream = true;
  return out;
}

function sampling(config: JsonObject, options: GeminiToAnthropicOptions): Msg {
  const out: Msg = {};
  const at = (key: string) => `generationConfig.${key}`;
  if (config.temperature !== undefined) {
    const t = config.temperature;
    if (typeof t !== 'number' || t < 0 || t > options.maxTemperature)
      refuse(at('temperature'), `the target takes 0 to ${options.maxTemperature}, got ${shown(t)}`);
    out.temperature = t;
  }
  if (config.topP !== undefined) out.top_p = config.topP;
  if (config.topK !== undefined) out.top_k = config.topK;
  if (config.stopSequences !== undefined)
    out.stop_sequences = arrayAt(config.stopSequences, at('stopSequences')).map((s, i) =>
      stringAt(s, `${at('stopSequences')}[${i}]`),
    );
  if (config.candidateCount !== undefined && config.candidateCount !== 1)
    refuse(at('candidateCount'), `one candidate translates, got ${shown(config.candidateCount)}`);
  if (config.responseMimeType !== undefined && config.responseMimeType !== 'text/plain')
    refuse(at('responseMimeType'), `only text/plain translates, got ${shown(config.responseMimeType)}`);
  for (const key of ['presencePenalty', 'frequencyPenalty'])
    if (config[key] !== undefined && config[key] !== 0) refuse(at(key), `the target has no ${key}`);
  if (config.responseModalities !== undefined) {
    const modalities = arrayAt(config.responseModalities, at('responseModalities'));
    if (modalities.length !== 1 || modalities[0] !== 'TEXT')
      refuse(at('responseModalities'), `only ["TEXT"] translates, got ${shown(modalities)}`);
  }
  if (config.thinkingConfig !== undefined) {
    const thinking = objectAt(config.thinkingConfig, at('thinkingConfig'));
    onlyKnown(thinking, new Set(['thinkingBudget', 'includeThoughts']), at('thinkingConfig'));
    // A budget asks the target to think, and its thoughts would come back as blocks with signatures Gemini cannot
    // carry. `includeThoughts` alone asks for none: the target is not asked to think, so there are none to include
    // (Gemini CLI sends it on every request for a model it does not know).
    if (thinking.thinkingBudget !== undefined && thinking.thinkingBudget !== 0)
      refuse(
        at('thinkingConfig'),
        'thinking has no exact equivalent (only no budget or {thinkingBudget: 0} translates)',
      );
    if (thinking.includeThoughts !== undefined && typeof thinking.includeThoughts !== 'boolean')
      refuse(at('thinkingConfig.includeThoughts'), `a boolean, got ${shown(thinking.includeThoughts)}`);
  }
  return out;
}

/** The system instruction as text blocks, one per part (a string is one part). */
function systemBlocks(value: unknown): Msg[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  const content = objectAt(value, 'systemInstruction');
  onlyKnown(content, new Set(['parts', 'role']), 'systemInstruction');
  return arrayAt(content.parts, 'systemInstruction.parts').map((p, i) => {
    const part = objectAt(p, `systemInstruction.parts[${i}]`);
    onlyKnown(part, new Set(['text']), `systemInstruction.parts[${i}]`);
    return { type: 'text', text: stringAt(part.text, `systemInstruction.parts[${i}].text`) };
  });
}

/**
 * Tool call ids: a functionCall without an id gets `call_<i>_<j>` (its place), and a functionResponse without one
 * answers the earliest unanswered call of its name, as Gemini pairs them.
 */
class CallNames {
  /** Unanswered calls: id → name. */
  private readonly open = new Map<string, string>();
  /** Each name's call ids in order, and how many at its head are answered (amortised O(1) a response). */
  private readonly byName = new Map<string, { ids: string[]; head: number }>();

  called(id: string | null, name: string, at: string): string {
    const chosen = id ?? at.replace(/^contents\[(\d+)\]\.parts\[(\d+)\]$/, 'call_$1_$2');
    this.open.set(chosen, name);
    const queue = this.byName.get(name) ?? { ids: [], head: 0 };
    queue.ids.push(chosen);
    this.byName.set(name, queue);
    return chosen;
  }

  answered(id: string | null, name: string, at: string): string {
    // An id is passed on as it is (one the conversation's calls do not show, the upstream judges).
    if (id !== null) {
      this.open.delete(id);
      return id;
    }
    const queue = this.byName.get(name);
    while (queue !== undefined && queue.head < queue.ids.length && !this.open.has(queue.ids[queue.head] ?? ''))
      queue.head += 1;
    const found = queue?.ids[queue.head];
    if (found === undefined)
      return refuse(`${at}.functionResponse.id`, `no earlier functionCall named ${shown(name)} is unanswered`);
    this.open.delete(found);
    return found;
  }
}

function turn(value: unknown, at: string, names: CallNames): Msg {
  const content = objectAt(value, at);
  onlyKnown(content, new Set(['role', 'parts']), at);
  const role = content.role ?? 'user';
  if (role !== 'user' && role !== 'model') refuse(`${at}.role`, `user or model is required, got ${shown(role)}`);
  const parts = arrayAt(content.parts, `${at}.parts`);
  if (parts.length === 0) refuse(`${at}.parts`, 'an empty turn has no Messages equivalent');
  const blocks = parts.map((p, j) => part(objectAt(p, `${at}.parts[${j}]`), `${at}.parts[${j}]`, role, names));
  return { role: role === 'model' ? 'assistant' : 'user', content: blocks };
}

/**
 * Google's documented placeholder for a part that has no signature from the model (Gemini CLI sets it on calls in its
 * history): it holds no thought, so nothing is lost without it. A signature the model minted is refused.
 */
const PLACEHOLDER_SIGNATURE = 'skip_thought_signature_validator';

function part(signed: JsonObject, at: string, role: string, names: CallNames): Msg {
  let p = signed;
  if (signed.thoughtSignature === PLACEHOLDER_SIGNATURE) {
    const { thoughtSignature: _, ...rest } = signed;
    p = rest;
  }
  if (p.text !== undefined) {
    onlyKnown(p, new Set(['text']), at);
    return { type: 'text', text: stringAt(p.text, `${at}.text`) };
  }
  if (p.inlineData !== undefined && role === 'user') {
    onlyKnown(p, new Set(['inlineData']), at);
    const data = objectAt(p.inlineData, `${at}.inlineData`);
    onlyKnown(data, new Set(['mimeType', 'data']), `${at}.inlineData`);
    const media = stringAt(data.mimeType, `${at}.inlineData.mimeType`);
    if (!IMAGE_TYPES.has(media)) refuse(`${at}.inlineData.mimeType`, `an image type is required, got ${shown(media)}`);
    const source = { type: 'base64', media_type: media, data: stringAt(data.data, `${at}.inlineData.data`) };
    return { type: 'image', source };
  }
  if (p.functionCall !== undefined && role === 'model') {
    onlyKnown(p, new Set(['functionCall']), at);
    const fc = objectAt(p.functionCall, `${at}.functionCall`);
    onlyKnown(fc, new Set(['id', 'name', 'args']), `${at}.functionCall`);
    const name = stringAt(fc.name, `${at}.functionCall.name`);
    const id = fc.id === undefined ? null : stringAt(fc.id, `${at}.functionCall.id`);
    const input = fc.args === undefined ? {} : objectAt(fc.args, `${at}.functionCall.args`);
    return { type: 'tool_use', id: names.called(id, name, at), name, input };
  }
  if (p.functionResponse !== undefined && role === 'user') {
    onlyKnown(p, new Set(['functionResponse']), at);
    const fr = objectAt(p.functionResponse, `${at}.functionResponse`);
    onlyKnown(fr, new Set(['id', 'name', 'response']), `${at}.functionResponse`);
    const name = stringAt(fr.name, `${at}.functionResponse.name`);
    const id = fr.id === undefined ? null : stringAt(fr.id, `${at}.functionResponse.id`);
    const response = objectAt(fr.response, `${at}.functionResponse.response`);
    return { type: 'tool_result', tool_use_id: names.answered(id, name, at), ...resultContent(response) };
  }
  const key = Object.keys(p)[0] ?? 'part';
  return refuse(`${at}.${key}`, `a ${role} part ${shown(key)} has no Messages equivalent`);
}

/**
 * A function's response as a tool result, by Gemini's convention (`{output}` on success, `{error}` on failure): a
 * lone string `output` is the result's text, a lone string `error` its text with `is_error`; any other response is
 * its JSON, as the model reads it.
 */
function resultContent(response: JsonObject): Msg {
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response.output === 'string') return { content: response.output };
  if (keys.length === 1 && typeof response.error === 'string') return { content: response.error, is_error: true };
  return { content: JSON.stringify(response) };
}

function tools(value: unknown): Msg[] {
  const out: Msg[] = [];
  arrayAt(value, 'tools').forEach((t, i) => {
    const tool = objectAt(t, `tools[${i}]`);
    onlyKnown(tool, new Set(['functionDeclarations']), `tools[${i}]`);
    arrayAt(tool.functionDeclarations, `tools[${i}].functionDeclarations`).forEach((d, k) => {
      const at = `tools[${i}].functionDeclarations[${k}]`;
      const decl = objectAt(d, at);
      onlyKnown(decl, new Set(['name', 'description', 'parameters', 'parametersJsonSchema']), at);
      const fn: Msg = { name: stringAt(decl.name, `${at}.name`) };
      if (decl.description !== undefined) fn.description = stringAt(decl.description, `${at}.description`);
      if (decl.parameters !== undefined && decl.parametersJsonSchema !== undefined)
        refuse(`${at}.parametersJsonSchema`, 'parameters and parametersJsonSchema are exclusive');
      fn.input_schema =
        decl.parametersJsonSchema !== undefined
          ? objectAt(decl.parametersJsonSchema, `${at}.parametersJsonSchema`)
          : decl.parameters !== undefined
            ? geminiSchemaToJson(decl.parameters, `${at}.parameters`)
            : { type: 'object', properties: {} };
      out.push(fn);
    });
  });
  return out;
}

function toolChoice(value: unknown): Msg | null {
  const config = objectAt(value, 'toolConfig');
  onlyKnown(config, new Set(['functionCallingConfig']), 'toolConfig');
  if (config.functionCallingConfig === undefined) return null;
  const at = 'toolConfig.functionCallingConfig';
  const fcc = objectAt(config.functionCallingConfig, at);
  onlyKnown(fcc, new Set(['mode', 'allowedFunctionNames']), at);
  const allowed =
    fcc.allowedFunctionNames === undefined
      ? null
      : arrayAt(fcc.allowedFunctionNames, `${at}.allowedFunctionNames`).map((n, i) =>
          stringAt(n, `${at}.allowedFunctionNames[${i}]`),
        );
  const mode = fcc.mode ?? 'AUTO';
  if (allowed !== null && !(mode === 'ANY' && allowed.length === 1))
    refuse(`${at}.allowedFunctionNames`, 'only one name, with mode ANY, translates (Messages forces one tool)');
  if (mode === 'AUTO') return { type: 'auto' };
  if (mode === 'NONE') return { type: 'none' };
  if (mode === 'ANY') return allowed === null ? { type: 'any' } : { type: 'tool', name: allowed[0] };
  return refuse(`${at}.mode`, `AUTO, ANY or NONE translates, got ${shown(mode)}`);
}
