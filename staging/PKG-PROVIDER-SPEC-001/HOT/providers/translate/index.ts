// Translation between client and upstream formats: one translator per ordered pair of surfaces.
import type { JsonObject } from '../json.js';
import type { WireSurface } from '../wire/spec.js';
import { anthropicRequestToChat } from './anthropic-to-chat.js';
import { chatRequestToAnthropic } from './chat-to-anthropic.js';
import { attempt, type Untranslatable } from './refusal.js';
import { anthropicReplyToChat, chatReplyToAnthropic } from './replies.js';
import { AnthropicToChatStream, ChatToAnthropicStream, type StreamTranslator } from './stream.js';

export { TranslationRefused, type Untranslatable } from './refusal.js';
export type { StreamTranslator } from './stream.js';

export type Translated<T> = { ok: true; value: T } | { ok: false; refusal: Untranslatable };

/** A client surface served by an upstream surface of another format. */
export interface Translator {
  readonly client: WireSurface;
  readonly upstream: WireSurface;
  /** The upstream body for the client's, or the first field it cannot express. */
  request(body: JsonObject): Translated<Record<string, unknown>>;
  /** A whole upstream reply as the client's format. */
  reply(body: JsonObject): Translated<Record<string, unknown>>;
  /** A fresh translator for one streamed reply (`push` throws TranslationRefused on an untranslatable event). */
  stream(): StreamTranslator;
}

/** Seconds since the epoch, for the `created` field Chat replies carry (injected so tests can fix it). */
export type Seconds = () => number;

const nowSeconds: Seconds = () => Math.floor(Date.now() / 1000);

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
  return null;
}
