import { boundJson, boundText } from '../bound.js';
import { asObject, getString, parseJson, type JsonObject } from '../json.js';
import { type StopReason, UNKNOWN_USAGE, type Usage } from '../spec.js';
import type { WireReader, WireResult } from './spec.js';

/** The state every surface reader fills in; `result()` copies it out. */
export function emptyResult(): WireResult {
  return {
    model: null,
    blocks: [],
    stop_reason: 'other',
    raw_stop_reason: null,
    usage: UNKNOWN_USAGE,
    usage_final: false,
    complete: false,
    stream_error: null,
  };
}

/** A surface that is not a generation (count_tokens, models): nothing to assemble, nothing to bill. */
export function passThroughReader(): WireReader {
  const state = emptyResult();
  return {
    body: () => {
      state.complete = true;
      return null;
    },
    event: () => {},
    result: () => ({ ...state }),
  };
}

/** A JSON object from an SSE data field, or null (a hostile or broken frame is ignored, never thrown). */
export function eventJson(data: string): JsonObject | null {
  const parsed = parseJson(data);
  return parsed.ok ? asObject(parsed.value) : null;
}

/** A short provider-chosen field, bounded and well-formed. */
export function shortField(obj: JsonObject | null, key: string): string | null {
  const value = getString(obj, key);
  return value === null ? null : boundText(value, []);
}

/** A raw usage object as recorded: bounded in depth, entries and sizes. */
export function boundedRaw(usage: JsonObject | null): Usage['raw'] {
  return usage === null ? null : (boundJson(usage, []) as Usage['raw']);
}

/** Parse a tool call's streamed argument text; kept as text when it is not JSON (a stream cut short). */
export function toolInput(text: string): unknown {
  if (text === '') return {};
  const parsed = parseJson(text);
  return parsed.ok ? parsed.value : text;
}

export type StopNormaliser = (raw: string | null) => StopReason;
