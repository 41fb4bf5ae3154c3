// Two translators joined through a pivot format: Gemini ⇄ Chat Completions goes through Messages, whose pairs with
// both exist. The pivot's own refusals name its field, relabelled to the client's where the two line up.
import type { SseFrame } from '../wire/sse.js';
import type { Untranslatable } from './refusal.js';
import type { StreamTranslator } from './stream.js';
import type { Translated, Translator } from './index.js';

/** The client's field for one of the pivot (Messages) request's: they line up turn by turn, part by part. */
const FROM_MESSAGES: ReadonlyArray<[RegExp, string]> = [
  [/^messages\[(\d+)\]\.content\[(\d+)\]/, 'contents[$1].parts[$2]'],
  [/^messages\[(\d+)\]/, 'contents[$1]'],
  [/^system\[(\d+)\]/, 'systemInstruction.parts[$1]'],
  [/^top_k$/, 'generationConfig.topK'],
  [/^stop_sequences/, 'generationConfig.stopSequences'],
  [/^max_tokens$/, 'generationConfig.maxOutputTokens'],
];

/** The Chat Completions field for a pivot field that comes from exactly one of its own. */
const CHAT_FROM_MESSAGES: ReadonlyArray<[RegExp, string]> = [
  [/^stop_sequences/, 'stop'],
  [/^max_tokens$/, 'max_completion_tokens'],
  [/^metadata\.user_id$/, 'user'],
];

/** A refusal of the second step, named for the client where the fields line up (Gemini's parts do 1:1). */
function relabel(refusal: Untranslatable, first: Translator, pivot: string): Untranslatable {
  const gemini = first.client === 'gemini.generate' || first.client === 'gemini.stream';
  const table = gemini ? FROM_MESSAGES : first.client === 'openai.chat' ? CHAT_FROM_MESSAGES : [];
  for (const [pattern, replacement] of table)
    if (pattern.test(refusal.field)) return { field: refusal.field.replace(pattern, replacement), why: refusal.why };
  return { field: refusal.field, why: `${refusal.why} (the field of its ${pivot} form)` };
}

function then<T>(
  first: Translated<Record<string, unknown>>,
  next: (value: Record<string, unknown>) => Translated<T>,
  label: (r: Untranslatable) => Untranslatable,
): Translated<T> {
  if (!first.ok) return first;
  const second = next(first.value);
  return second.ok ? second : { ok: false, refusal: label(second.refusal) };
}

/** `first` (client → pivot) then `second` (pivot → upstream); replies and streams the other way. */
export function compose(first: Translator, second: Translator): Translator {
  const pivot = first.upstream;
  return {
    client: first.client,
    upstream: second.upstream,
    request: (body, call) =>
      then(
        first.request(body, call),
        (b) => second.request(b, call),
        (r) => relabel(r, first, pivot),
      ),
    reply: (body) =>
      then(
        second.reply(body),
        (b) => first.reply(b),
        (r) => r,
      ),
    stream: () => {
      const inner = second.stream();
      const outer = first.stream();
      return {
        push: (frame: SseFrame) => inner.push(frame).flatMap((f) => outer.push(f)),
      } satisfies StreamTranslator;
    },
  };
}
