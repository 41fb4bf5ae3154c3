// Translation between client and upstream formats: one translator per ordered pair of surfaces, Gemini ⇄ Chat
// Completions, Responses → Chat / Gemini and Chat / Gemini → Responses through Messages (compose.ts).
import type { JsonObject } from '../json.js';
import type { WireSurface } from '../wire/spec.js';
import { anthropicRequestToChat } from './anthropic-to-chat.js';
import { anthropicRequestToGemini } from './anthropic-to-gemini.js';
import { anthropicRequestToResponses } from './anthropic-to-responses.js';
import { chatRequestToAnthropic } from './chat-to-anthropic.js';
import { compose } from './compose.js';
import { anthropicReplyToGemini, geminiReplyToAnthropic } from './gemini-replies.js';
import { AnthropicToGeminiStream, GeminiToAnthropicStream } from './gemini-stream.js';
import { geminiRequestToAnthropic } from './gemini-to-anthropic.js';
import { attempt, type Untranslatable } from './refusal.js';
import { anthropicReplyToChat, chatReplyToAnthropic } from './replies.js';
import { anthropicReplyToResponses } from './responses-replies.js';
import { AnthropicToResponsesStream } from './responses-stream.js';
import { responsesRequestToAnthropic } from './responses-to-anthropic.js';
import { responsesReplyToAnthropic } from './responses-upstream.js';
import { ResponsesToAnthropicStream } from './responses-upstream-stream.js';
import { AnthropicToChatStream, ChatToAnthropicStream, type StreamTranslator } from './stream.js';

export { TranslationRefused, type Untranslatable } from './refusal.js';
export type { StreamTranslator } from './stream.js';

export type Translated<T> = { ok: true; value: T } | { ok: false; refusal: Untranslatable };

/** What a request's body may not say and the upstream's needs: Gemini names the model in its path, streaming in its method. */
export interface TranslationCall {
  model: string;
  stream: boolean;
  /** The output limit for a body that sets none, where the upstream requires one (the gateway's output bound). */
  defaultMaxTokens: number;
}

/** A client surface served by an upstream surface of another format. */
export interface Translator {
  readonly client: WireSurface;
  readonly upstream: WireSurface;
  /** The upstream body for the client's, or the first field it cannot express. */
  request(body: JsonObject, call?: TranslationCall): Translated<Record<string, unknown>>;
  /** A whole upstream reply as the client's format. */
  reply(body: JsonObject): Translated<Record<string, unknown>>;
  /** A fresh translator for one streamed reply (`push` throws TranslationRefused on an untranslatable event). */
  stream(): StreamTranslator;
}

/** Seconds since the epoch, for the `created` field Chat replies carry (injected so tests can fix it). */
export type Seconds = () => number;

const nowSeconds: Seconds = () => Math.floor(Date.now() / 1000);

const isGemini = (s: WireSurface): boolean => s === 'gemini.generate' || s === 'gemini.stream';

/** A Gemini body's call facts when the caller gave none: the body's own model, streaming as its surface says. */
function geminiCall(client: WireSurface, body: JsonObject, call: TranslationCall | undefined): TranslationCall {
  return call ?? { model: String(body.model ?? ''), stream: client === 'gemini.stream', defaultMaxTokens: 32_000 };
}

/** The translator from `client` to `upstream`, or null when they are the same surface or no translation exists. */
export function translatorFor(
  client: WireSurface,
  upstream: WireSurface,
  clock: Seconds = nowSeconds,
): Translator | null {
  if (client === 'anthropic.messages' && upstream === 'openai.chat')
    return {
      client,
      upstream,
      request: (body) => attempt(() => anthropicRequestToChat(body)),
      reply: (body) => attempt(() => chatReplyToAnthropic(body)),
      stream: () => new ChatToAnthropicStream(),
    };
  if (client === 'openai.chat' && upstream === 'anthropic.messages')
    return {
      client,
      upstream,
      request: (body) => attempt(() => chatRequestToAnthropic(body)),
      reply: (body) => attempt(() => anthropicReplyToChat(body, clock())),
      stream: () => new AnthropicToChatStream(clock()),
    };
  if (isGemini(client) && upstream === 'anthropic.messages') return geminiToAnthropic(client, 1);
  if (client === 'anthropic.messages' && isGemini(upstream))
    return {
      client,
      upstream,
      request: (body) => attempt(() => anthropicRequestToGemini(body)),
      reply: (body) => attempt(() => geminiReplyToAnthropic(body)),
      stream: () => new GeminiToAnthropicStream(),
    };
  if (client === 'openai.responses' && upstream === 'anthropic.messages')
    return {
      client,
      upstream,
      request: (body, call) => attempt(() => responsesRequestToAnthropic(body, responsesCall(body, call))),
      reply: (body) => attempt(() => anthropicReplyToResponses(body, clock())),
      stream: () => new AnthropicToResponsesStream(clock()),
    };
  if (client === 'anthropic.messages' && upstream === 'openai.responses')
    return {
      client,
      upstream,
      request: (body) => attempt(() => anthropicRequestToResponses(body)),
      reply: (body) => attempt(() => responsesReplyToAnthropic(body)),
      stream: () => new ResponsesToAnthropicStream(),
    };
  if (client === 'openai.chat' && upstream === 'openai.responses')
    return compose(
      translatorFor(client, 'anthropic.messages', clock) as Translator,
      translatorFor('anthropic.messages', upstream, clock) as Translator,
    );
  if (isGemini(client) && upstream === 'openai.responses')
    // The Responses API takes temperatures up to 2, as Gemini does.
    return compose(geminiToAnthropic(client, 2), translatorFor('anthropic.messages', upstream, clock) as Translator);
  if (client === 'openai.responses' && (isGemini(upstream) || upstream === 'openai.chat'))
    return compose(
      translatorFor(client, 'anthropic.messages', clock) as Translator,
      translatorFor('anthropic.messages', upstream, clock) as Translator,
    );
  if (isGemini(client) && upstream === 'openai.chat')
    // Chat takes temperatures up to 2, as Gemini does: the Messages step lets them through.
    return compose(geminiToAnthropic(client, 2), translatorFor('anthropic.messages', upstream, clock) as Translator);
  if (client === 'openai.chat' && isGemini(upstream))
    return compose(
      translatorFor(client, 'anthropic.messages', clock) as Translator,
      translatorFor('anthropic.messages', upstream, clock) as Translator,
    );
  return null;
}

/** A Responses body's call facts when the caller gave none: the body's own model and stream flag. */
function responsesCall(body: JsonObject, call: TranslationCall | undefined): TranslationCall {
  return call ?? { model: String(body.model ?? ''), stream: body.stream === true, defaultMaxTokens: 32_000 };
}

function geminiToAnthropic(client: WireSurface, maxTemperature: number): Translator {
  return {
    client,
    upstream: 'anthropic.messages',
    request: (body, call) =>
      attempt(() => geminiRequestToAnthropic(body, geminiCall(client, body, call), { maxTemperature })),
    reply: (body) => attempt(() => anthropicReplyToGemini(body)),
    stream: () => new AnthropicToGeminiStream(),
  };
}
