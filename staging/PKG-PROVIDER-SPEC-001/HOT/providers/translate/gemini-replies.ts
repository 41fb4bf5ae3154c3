// Whole replies between Gemini and Messages: parts ↔ blocks in order, function calls ↔ tool_use with their ids,
// finish ↔ stop reasons, usage bucket by bucket.
import { asObject, getObject, getString, type JsonObject } from '../json.js';
import { objectAt, refuse, shown } from './refusal.js';
import { anthropicUsageToGemini, geminiUsageToAnthropic } from './usage.js';

/** Gemini finish reasons as Messages stop reasons (a turn that called a function ends with STOP: tool_use). */
const GEMINI_TO_ANTHROPIC_STOP: Readonly<Record<string, string>> = {
  STOP: 'end_turn',
  MAX_TOKENS: 'max_tokens',
  SAFETY: 'refusal',
  RECITATION: 'refusal',
  BLOCKLIST: 'refusal',
  PROHIBITED_CONTENT: 'refusal',
  SPII: 'refusal',
};

const ANTHROPIC_TO_GEMINI_STOP: Readonly<Record<string, string>> = {
  end_turn: 'STOP',
  stop_sequence: 'STOP',
  tool_use: 'STOP',
  max_tokens: 'MAX_TOKENS',
  model_context_window_exceeded: 'MAX_TOKENS',
  refusal: 'SAFETY',
};

export function geminiStop(raw: string, calledTools: boolean, at: string): string {
  const stop = GEMINI_TO_ANTHROPIC_STOP[raw] ?? refuse(at, `the finish reason ${shown(raw)} has no equivalent`);
  return calledTools && stop === 'end_turn' ? 'tool_use' : stop;
}

export function anthropicStopToGemini(raw: string, at: string): string {
  return ANTHROPIC_TO_GEMINI_STOP[raw] ?? refuse(at, `the stop reason ${shown(raw)} has no equivalent`);
}

/** The id a function call without one is given: its reply's id and its place, marked as the gateway's own. */
export function syntheticCallId(responseId: string | null, k: number): string {
  return `toolu_gemini_${(responseId ?? 'reply').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}_${k}`;
}

/** The first candidate of a Gemini reply (index 0, left out as a proto3 zero), or null for a blocked prompt. */
export function firstCandidate(body: JsonObject, at = 'candidates'): JsonObject | null {
  if (body.candidates === undefined) return null;
  if (!Array.isArray(body.candidates)) return refuse(at, 'an array is required');
  if (body.candidates.length > 1)
    refuse(at, `one candidate was asked for, the upstream sent ${body.candidates.length}`);
  return body.candidates.length === 0 ? null : objectAt(body.candidates[0], `${at}[0]`);
}

/**
 * A candidate's parts as Messages blocks: text parts run together (as Gemini's own SDK reads them), a function call
 * a tool_use; `k` counts the calls of the whole reply (for the ids it makes up).
 */
export function partsToBlocks(
  parts: unknown,
  at: string,
  responseId: string | null,
  calls: { k: number },
): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (parts === undefined) return blocks;
  if (!Array.isArray(parts)) return refuse(at, 'an array is required');
  parts.forEach((p, j) => {
    const part = objectAt(p, `${at}[${j}]`);
    if (part.thought === true) refuse(`${at}[${j}].thought`, 'thoughts were not asked for and have no equivalent');
    const call = getObject(part, 'functionCall');
    if (call !== null) {
      const id = getString(call, 'id') ?? syntheticCallId(responseId, calls.k);
      calls.k += 1;
      const input = call.args === undefined ? {} : objectAt(call.args, `${at}[${j}].functionCall.args`);
      blocks.push({ type: 'tool_use', id, name: getString(call, 'name') ?? '', input });
    } else if (typeof part.text === 'string') {
      const last = blocks[blocks.length - 1];
      if (last?.type === 'text') last.text = `${String(last.text)}${part.text}`;
      else if (part.text !== '') blocks.push({ type: 'text', text: part.text });
    } else if (Object.keys(part).some((key) => key !== 'thoughtSignature'))
      refuse(`${at}[${j}]`, `a ${shown(Object.keys(part)[0])} part has no Messages equivalent`);
  });
  return blocks;
}

/** A generateContent reply as a Messages reply (one candidate was asked for). */
export function geminiReplyToAnthropic(body: JsonObject): Record<string, unknown> {
  const candidate = firstCandidate(body);
  const responseId = getString(body, 'responseId');
  const content = partsToBlocks(getObject(candidate, 'content')?.parts, 'candidates[0].content.parts', responseId, {
    k: 0,
  });
  const blocked = getString(getObject(body, 'promptFeedback'), 'blockReason');
  const finish = getString(candidate, 'finishReason');
  const stop =
    candidate === null && blocked !== null
      ? 'refusal'
      : geminiStop(
          finish ?? 'STOP',
          content.some((b) => b.type === 'tool_use'),
          'candidates[0].finishReason',
        );
  return {
    id: `msg_${responseId ?? 'translated'}`,
    type: 'message',
    role: 'assistant',
    model: body.modelVersion ?? null,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: geminiUsageToAnthropic(getObject(body, 'usageMetadata')),
  };
}

/** Messages blocks as Gemini parts: text as text, tool_use as a functionCall with its id. */
export function blocksToParts(blocks: unknown, at: string): Record<string, unknown>[] {
  if (!Array.isArray(blocks)) return refuse(at, 'an array is required');
  return blocks.map((b, k) => {
    const block = objectAt(b, `${at}[${k}]`);
    if (block.type === 'text') return { text: getString(block, 'text') ?? '' };
    if (block.type === 'tool_use')
      return {
        functionCall: { id: getString(block, 'id'), name: getString(block, 'name'), args: asObject(block.input) ?? {} },
      };
    return refuse(`${at}[${k}].type`, `a ${shown(block.type)} block has no Gemini equivalent`);
  });
}

/** A Messages reply as a generateContent reply. */
export function anthropicReplyToGemini(body: JsonObject): Record<string, unknown> {
  const parts = blocksToParts(body.content, 'content');
  const finishReason = anthropicStopToGemini(getString(body, 'stop_reason') ?? 'end_turn', 'stop_reason');
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }],
    usageMetadata: anthropicUsageToGemini(getObject(body, 'usage')),
    modelVersion: body.model ?? null,
    responseId: getString(body, 'id'),
  };
}
