import { show } from '#kernel/errors.js';
import type { JsonObject } from '#providers/json.js';
import { asObject } from '#providers/json.js';
import { isNonEmptyString, isPositiveInt, systemBlocks } from '#providers/request.js';
import type { SimpleRequest } from '#providers/spec.js';

/**
 * A generateContent body for a simple request, with its `model` beside it (the URL carries it: `splitModel`).
 * Gemini caches repeated prompt prefixes itself (implicit caching): a system block's `cache` asks for nothing here.
 */
export function generateBody(request: SimpleRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model };
  const system = systemBlocks(request.system);
  body.contents = [{ role: 'user', parts: [{ text: request.prompt }] }];
  if (system.length > 0) body.systemInstruction = { parts: system.map((b) => ({ text: b.text })) };
  const config: Record<string, unknown> = { maxOutputTokens: request.max_tokens };
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.stop_sequences !== undefined) config.stopSequences = [...request.stop_sequences];
  body.generationConfig = config;
  return body;
}

/**
 * A pre-rendered body: a generateContent body plus the `model` it is for, with `contents` and
 * `generationConfig.maxOutputTokens` (the bound its budget reserves).
 */
export function checkGenerateBody(body: JsonObject): string | null {
  if (!isNonEmptyString(body.model)) return `body.model must be a non-empty string, got ${show(body.model)}`;
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return `body.contents must be a non-empty array, got ${show(body.contents)}`;
  const max = asObject(body.generationConfig)?.maxOutputTokens;
  if (!isPositiveInt(max)) return `body.generationConfig.maxOutputTokens must be a positive integer, got ${show(max)}`;
  return null;
}

/** A model id as the URL's `{model}` takes it: the API's resource name `models/…` without its collection. */
export function modelParam(model: string): string {
  return model.startsWith('models/') ? model.slice('models/'.length) : model;
}

/** The body sent (without `model`) and the path parameter the model travels as. */
export function splitModel(body: Readonly<Record<string, unknown>>): {
  body: Record<string, unknown>;
  params: Record<string, string>;
} {
  const { model, ...rest } = body;
  return { body: rest, params: { model: modelParam(String(model)) } };
}
