import type { Attributes } from '@opentelemetry/api';
import type { ObservedCall, ObservedConclusion } from '#router/observer.js';
import { scrubText } from '#router/scrub.js';

/** Our provider ids as the GenAI semantic conventions name the providers (`gen_ai.provider.name`). */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  anthropic: 'anthropic',
  openai: 'openai',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
};

export const providerName = (id: string): string => PROVIDER_NAMES[id] ?? id;

const count = (value: unknown): number | null =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/** What is known at admission: the operation, the provider and model asked for, the call's ids. */
export function requestAttributes(call: ObservedCall): Attributes {
  const { request } = call;
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': providerName(request.provider_id),
    'gen_ai.request.model': request.model_id,
    'gen_ai.conversation.id': request.session_id,
    'cplane.session_id': request.session_id,
    'cplane.surface': request.contract_id,
    ...(request.request_id === undefined ? {} : { 'cplane.request_id': request.request_id }),
    ...(request.max_tokens === undefined ? {} : { 'gen_ai.request.max_tokens': request.max_tokens }),
  };
}

/**
 * What the EXCHANGE records, as the GenAI conventions name it: the model that answered, token usage (cache reads and
 * writes too), the finish reason, the error, and the EXCHANGE's ledger id. Absent values are left off, never zeroed.
 */
export function exchangeAttributes(seen: ObservedConclusion): Attributes {
  const meta = (seen.exchange.metadata ?? {}) as Record<string, unknown>;
  const attributes: Attributes = {
    'cplane.exchange_id': seen.exchangeId,
    'cplane.dispatch_id': text(meta.dispatch_entry_id) ?? '',
    'cplane.outcome': text(meta.outcome) ?? seen.exchange.decision ?? '',
  };
  const model = text(meta.model_id);
  if (model !== null) attributes['gen_ai.response.model'] = model;
  const responseId = text(meta.upstream_request_id);
  if (responseId !== null) attributes['gen_ai.response.id'] = responseId;
  const usage: [string, unknown][] = [
    ['gen_ai.usage.input_tokens', meta.input_tokens],
    ['gen_ai.usage.output_tokens', meta.output_tokens],
    ['gen_ai.usage.cache_read.input_tokens', meta.cache_read_tokens],
    ['gen_ai.usage.cache_creation.input_tokens', meta.cache_write_tokens],
  ];
  for (const [name, value] of usage) {
    const n = count(value);
    if (n !== null) attributes[name] = n;
  }
  const finish = text(meta.raw_stop_reason) ?? text(meta.finish_reason);
  if (finish !== null) attributes['gen_ai.response.finish_reasons'] = [finish];
  const errorCode = text(meta.error_code);
  if (errorCode !== null) attributes['error.type'] = errorCode;
  if (seen.cost !== null) attributes['cplane.cost'] = seen.cost;
  return attributes;
}

/** The prompt and the answer as the EXCHANGE holds them, scrubbed of the call's secrets, for an operator who asks. */
export function contentAttributes(call: ObservedCall, seen: ObservedConclusion): Attributes {
  const content = seen.exchange.content;
  if (content === undefined || content === null) return {};
  const prompt = scrubText(content.prompt.join(''), call.secrets);
  const response = scrubText(content.response.join(''), call.secrets);
  const meta = (seen.exchange.metadata ?? {}) as Record<string, unknown>;
  const finish = text(meta.finish_reason) ?? 'other';
  return {
    'gen_ai.input.messages': prompt,
    'gen_ai.output.messages': JSON.stringify([
      { role: 'assistant', parts: [{ type: 'text', content: response }], finish_reason: finish },
    ]),
  };
}

/** One upstream attempt as its record in the EXCHANGE says it went. */
export function attemptAttributes(record: Record<string, unknown>): Attributes {
  const attributes: Attributes = { 'cplane.attempt': count(record.attempt) ?? 0 };
  const status = count(record.status);
  if (status !== null) attributes['http.response.status_code'] = status;
  if (record.outcome !== 'success') attributes['error.type'] = text(record.kind) ?? text(record.outcome) ?? 'error';
  const provider = text(record.provider);
  if (provider !== null) attributes['gen_ai.provider.name'] = providerName(provider);
  const model = text(record.model);
  if (model !== null) attributes['gen_ai.request.model'] = model;
  const deployment = text(record.deployment);
  if (deployment !== null) attributes['cplane.deployment'] = deployment;
  return attributes;
}
