import { show } from '#kernel/errors.js';
import { ProviderError } from './errors.js';
import { asObject, type JsonObject } from './json.js';
import type { ProviderRequest } from './spec.js';

/** Checks a provider-native body; returns a description of the first problem, or null when it is usable. */
export type BodyCheck = (body: JsonObject) => string | null;

/**
 * Validate a ProviderRequest at the edge (before anything is sent). A bad request is a ProviderError of
 * kind `invalid_request` with no status: nothing reached the provider.
 */
export function parseProviderRequest(value: unknown, providerId: string, checkBody: BodyCheck): ProviderRequest {
  const problem = describeProblem(value, checkBody);
  if (problem !== null) {
    throw new ProviderError({
      kind: 'invalid_request',
      providerId,
      message: `invalid request for provider ${show(providerId)}: ${problem}`,
    });
  }
  return value as ProviderRequest;
}

function describeProblem(value: unknown, checkBody: BodyCheck): string | null {
  const obj = asObject(value);
  if (obj === null) return `expected an object, got ${show(value)}`;
  if ('body' in obj) {
    const body = asObject(obj.body);
    return body === null ? `body must be an object, got ${show(obj.body)}` : checkBody(body);
  }
  return simpleRequestProblem(obj);
}

function simpleRequestProblem(obj: JsonObject): string | null {
  if (!isNonEmptyString(obj.model)) return `model must be a non-empty string, got ${show(obj.model)}`;
  if (!isPositiveInt(obj.max_tokens)) return `max_tokens must be a positive integer, got ${show(obj.max_tokens)}`;
  if (typeof obj.prompt !== 'string') return `prompt must be a string, got ${show(obj.prompt)}`;
  if (
    obj.temperature !== undefined &&
    !(typeof obj.temperature === 'number' && Number.isFinite(obj.temperature) && obj.temperature >= 0)
  ) {
    return `temperature must be a non-negative number, got ${show(obj.temperature)}`;
  }
  if (
    obj.stop_sequences !== undefined &&
    !(Array.isArray(obj.stop_sequences) && obj.stop_sequences.every((s) => typeof s === 'string'))
  ) {
    return `stop_sequences must be an array of strings, got ${show(obj.stop_sequences)}`;
  }
  return systemProblem(obj.system);
}

function systemProblem(system: unknown): string | null {
  if (system === undefined || typeof system === 'string') return null;
  if (!Array.isArray(system))
    return `system must be a string or an array of {text, cache?} blocks, got ${show(system)}`;
  for (const [i, block] of system.entries()) {
    const b = asObject(block);
    if (b === null || typeof b.text !== 'string') return `system[${i}].text must be a string, got ${show(block)}`;
    if (b.cache !== undefined && typeof b.cache !== 'boolean')
      return `system[${i}].cache must be a boolean, got ${show(b.cache)}`;
  }
  return null;
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

export function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** Shared body check: `model` string, `messages` non-empty array, and one of `maxKeys` a positive integer. */
export function requireModelMessagesMax(body: JsonObject, maxKeys: readonly string[]): string | null {
  if (!isNonEmptyString(body.model)) return `body.model must be a non-empty string, got ${show(body.model)}`;
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return `body.messages must be a non-empty array, got ${show(body.messages)}`;
  if (!maxKeys.some((k) => isPositiveInt(body[k]))) {
    return `body.${maxKeys.join(' or body.')} must be a positive integer, got ${show(maxKeys.map((k) => body[k]))}`;
  }
  return null;
}

/** The system prompt as blocks, whichever form it was given in. */
export function systemBlocks(
  system: string | readonly { text: string; cache?: boolean }[] | undefined,
): { text: string; cache: boolean }[] {
  if (system === undefined) return [];
  if (typeof system === 'string') return system === '' ? [] : [{ text: system, cache: false }];
  return system.map((b) => ({ text: b.text, cache: b.cache === true }));
}
