// An OpenAI Responses request as an Anthropic Messages request: every field mapped exactly, or refused by name.
// The conversation (`input` items) is translated in responses-input.ts.
import type { JsonObject } from '../json.js';
import type { TranslationCall } from './index.js';
import { arrayAt, isObject, objectAt, onlyKnown, refuse, shown, stringAt } from './refusal.js';
import { responsesConversation } from './responses-input.js';

type Msg = Record<string, unknown>;

const isNull = (v: unknown): boolean => v === null;

/** Fields whose neutral value is accepted (it asks for nothing Messages would do differently); any other is refused. */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  // A translated response is not kept by OpenAI, so it cannot be continued by id: storing is refused, not faked.
  store: (v) => v === false || v === null,
  previous_response_id: isNull,
  conversation: isNull,
  prompt: isNull,
  background: (v) => v === false || v === null,
  max_tool_calls: isNull,
  top_logprobs: (v) => v === 0 || v === null,
  truncation: (v) => v === 'disabled' || v === null,
  service_tier: (v) => v === 'auto' || v === 'default' || v === null,
  metadata: (v) => v === null || (isObject(v) && Object.keys(v).length === 0),
  // Reasoning items' encrypted content: a translated request asks for no reasoning (below), so there is none to add.
  include: (v) => v === null || (Array.isArray(v) && v.every((x) => x === 'reasoning.encrypted_content')),
  reasoning: (v) => v === null || (isObject(v) && noReasoning(v)),
  text: (v) => v === null || (isObject(v) && Object.keys(v).every((k) => k === 'format') && plainText(v.format)),
  // Codex CLI's tags of its own request (installation, thread and turn ids): the model reads nothing from them.
  client_metadata: (v) => v === null || (isObject(v) && Object.values(v).every((x) => typeof x === 'string')),
  // A hint routing the request to a warm OpenAI prompt cache: the answer is the same without it.
  prompt_cache_key: (v) => typeof v === 'string' || v === null,
  // Obfuscation pads OpenAI's delta events; a translated stream carries none, so either value is honoured.
  stream_options: (v) => v === null || (isObject(v) && Object.keys(v).every((k) => k === 'include_obfuscation')),
  parallel_tool_calls: (v) => typeof v === 'boolean' || v === null,
};

/**
 * Reasoning settings asking for no reasoning: no effort (the model's default, which for Claude is not to think) or
 * `none`. A summary setting then asks for nothing (there is no reasoning to summarise), as Codex CLI sends it.
 */
function noReasoning(reasoning: Record<string, unknown>): boolean {
  const summary = (v: unknown): boolean =>
    v === undefined || v === null || v === 'auto' || v === 'concise' || v === 'detailed';
  return (
    Object.keys(reasoning).every((k) => k === 'effort' || k === 'summary' || k === 'generate_summary') &&
    (reasoning.effort === undefined || reasoning.effort === null || reasoning.effort === 'none') &&
    summary(reasoning.summary) &&
    summary(reasoning.generate_summary)
  );
}

const plainText = (format: unknown): boolean =>
  format === undefined || format === null || (isObject(format) && format.type === 'text');

const TOP = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'stream',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'user',
  'safety_identifier',
  ...Object.keys(NEUTRAL),
]);

/** The Messages body for a Responses body (already checked by the gateway: model, output limit, input). */
export function responsesRequestToAnthropic(body: JsonObject, call: TranslationCall): Record<string, unknown> {
  for (const key of Object.keys(body)) {
    if (!TOP.has(key)) refuse(key, 'Anthropic Messages has no equivalent for this field');
    const neutral = NEUTRAL[key];
    if (neutral !== undefined && body[key] !== undefined && !neutral(body[key]))
      refuse(key, `Anthropic Messages cannot honour ${shown(body[key])} (only the default translates)`);
  }
  const out: Msg = { model: body.model };
  // The Responses API's limit defaults to the model's; the gateway's output bound stands in for it, as reserved.
  out.max_tokens = body.max_output_tokens ?? call.defaultMaxTokens;
  const instructions =
    body.instructions === undefined || body.instructions === null ? null : stringAt(body.instructions, 'instructions');
  const { system, messages } = responsesConversation(body.input);
  const systemText = [instructions, system].filter((s): s is string => s !== null && s !== '');
  if (systemText.length > 0) out.system = systemText.join('\n\n');
  out.messages = messages;
  if (typeof body.temperature === 'number' && body.temperature > 1)
    refuse('temperature', `Anthropic takes 0 to 1, got ${body.temperature}`);
  for (const key of ['temperature', 'top_p'] as const)
    if (body[key] !== undefined && body[key] !== null) out[key] = body[key];
  Object.assign(out, toolFields(body));
  const user = endUser(body);
  if (user !== null) out.metadata = { user_id: user };
  if (body.stream === true) out.stream = true;
  return out;
}

/**
 * `tools`, `tool_choice` and `parallel_tool_calls` as Messages' `tools` and `tool_choice`. Messages takes a tool
 * choice only beside tools: with none offered, `auto` / `none` and the parallel flag ask nothing and are not sent,
 * and a choice that requires a call is refused.
 */
function toolFields(body: JsonObject): Msg {
  const tools =
    body.tools === undefined || body.tools === null
      ? []
      : arrayAt(body.tools, 'tools').map((t, i) => tool(t, `tools[${i}]`));
  const choice = body.tool_choice === undefined || body.tool_choice === null ? null : toolChoice(body.tool_choice);
  if (tools.length === 0) {
    if (choice !== null && choice.type !== 'auto' && choice.type !== 'none')
      refuse('tool_choice', `a call of a tool is required (${shown(body.tool_choice)}), but no tools are offered`);
    return {};
  }
  if (body.parallel_tool_calls === false)
    return { tools, tool_choice: { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true } };
  return choice === null ? { tools } : { tools, tool_choice: choice };
}

/** `user` (deprecated) or `safety_identifier`: the end user Anthropic's `metadata.user_id` names. */
function endUser(body: JsonObject): string | null {
  const user = body.user === undefined || body.user === null ? null : stringAt(body.user, 'user');
  const safety =
    body.safety_identifier === undefined || body.safety_identifier === null
      ? null
      : stringAt(body.safety_identifier, 'safety_identifier');
  if (user !== null && safety !== null && user !== safety)
    refuse('safety_identifier', 'Anthropic names one end user (metadata.user_id); user and safety_identifier differ');
  return safety ?? user;
}

/** Function tools translate; OpenAI's built-in tools (web_search, file_search, …) run on OpenAI's side only. */
function tool(value: unknown, at: string): Msg {
  const t = objectAt(value, at);
  if (t.type !== 'function')
    refuse(`${at}.type`, `the built-in tool ${shown(t.type)} runs only on OpenAI; function tools translate`);
  onlyKnown(t, new Set(['type', 'name', 'description', 'parameters', 'strict']), at);
  // The Responses API enforces the schema unless told not to; Anthropic Messages has no strict adherence.
  if (t.strict !== false && t.strict !== null)
    refuse(
      `${at}.strict`,
      'Anthropic Messages has no strict schema adherence (the Responses default): set strict: false',
    );
  const out: Msg = { name: stringAt(t.name, `${at}.name`) };
  if (t.description !== undefined && t.description !== null)
    out.description = stringAt(t.description, `${at}.description`);
  // A function without parameters takes none: the empty object schema says exactly that.
  out.input_schema =
    t.parameters === undefined || t.parameters === null
      ? { type: 'object', properties: {} }
      : objectAt(t.parameters, `${at}.parameters`);
  return out;
}

function toolChoice(value: unknown): Msg {
  if (value === 'auto') return { type: 'auto' };
  if (value === 'none') return { type: 'none' };
  if (value === 'required') return { type: 'any' };
  const choice = objectAt(value, 'tool_choice');
  if (choice.type !== 'function')
    refuse('tool_choice.type', `a function (or auto, none, required) is required, got ${shown(choice.type)}`);
  onlyKnown(choice, new Set(['type', 'name']), 'tool_choice');
  return { type: 'tool', name: stringAt(choice.name, 'tool_choice.name') };
}
