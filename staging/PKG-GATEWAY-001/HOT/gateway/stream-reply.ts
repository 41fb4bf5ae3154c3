import { type SseFrame, SseParser } from '#providers/wire/sse.js';
import type { WireResponse, WireResult } from '#providers/wire/spec.js';
import { TranslationRefused } from '#providers/translate/index.js';
import type { ProviderResult } from '#providers/spec.js';
import type { GovernedCall } from '#router/governed.js';
import type { AttemptRecord } from '#router/records.js';
import { classify, type SendFailure } from '#router/send.js';
import type { CallContext } from './call.js';
import { answerOf, logUnrecorded, noteConcluded, recordableContent, resultExtra, UNRECORDABLE } from './conclusion.js';
import { dropRest } from './body-rest.js';
import { flushed, write } from './http-io.js';
import { type FrameAction, framePolicy, type Generation } from './request-body.js';
import { withServedHeader } from './route-plan.js';
import { clientFrames, untranslatable } from './routed.js';
import { errorFrame, requestIdHeader } from './surfaces.js';
import { clientMessage, malformedReply } from './upstream-failure.js';
import { withoutSecrets } from './without-secrets.js';

type Attempts = AttemptRecord[];

export async function streamReply(
  ctx: CallContext,
  call: GovernedCall,
  gen: Generation,
  wire: WireResponse,
  attempts: Attempts,
  extra: Record<string, unknown>,
): Promise<void> {
  const { res, endpoint } = ctx;
  const reader = ctx.provider.reader(ctx.translator?.upstream ?? endpoint.surface);
  const policy = framePolicy(endpoint.surface, gen.clientWantsUsage);
  const translate = clientFrames(ctx.translator);
  const parser = new SseParser({ providerId: ctx.provider.id });
  const held: string[] = [];
  // A client that takes no bytes for the upstream idle timeout is given up on (the upstream is timed out by then).
  let stalled = false;
  let first = true;
  const send = async (text: string): Promise<void> => {
    if (first) ctx.router.firstToken(call);
    first = false;
    stalled ||= await write(res, text, { signal: ctx.signal, stallMs: ctx.upstreamTimeoutMs });
  };
  const headers: Record<string, string> = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  };
  headers[requestIdHeader(endpoint.family)] = ctx.requestId;
  res.writeHead(200, withServedHeader(headers, ctx.servedBy ?? null));
  res.flushHeaders();
  let failure: SendFailure | null = null;
  const body = wire.body[Symbol.asyncIterator]();
  // Whether the body is still to be closed here: not once it ended, failed, or was handed to dropRest.
  let open = true;
  try {
    // The terminal event (or an error event) ends the reply: an upstream that holds its connection open past it (or
    // drops it before closing the body cleanly) is not waited on; the rest of its body is read (or cut) aside.
    reading: for (;;) {
      const next = await body.next();
      if (next.done === true) break;
      for (const upstream of parser.push(next.value)) {
        if (upstream.data !== null) reader.event(upstream.event, upstream.data);
        const { out, ended } = dispatchFrames(translate(upstream), policy, held, call.secrets);
        if (out !== '') await send(out);
        if (ended) {
          dropRest(body, wire.cancel);
          break reading;
        }
      }
    }
    open = false;
  } catch (error) {
    failure = error instanceof TranslationRefused ? malformedReply(ctx, wire, untranslatable(error)) : classify(error);
  } finally {
    // Left early by a failure: the body is closed, and its connection with it (as a for-await loop would).
    if (open) await body.return?.()?.catch(() => undefined);
  }
  // The frames forwarded so far go out now, not after the commit the conclusion below waits for.
  await flushed();
  const result = reader.result();
  const content = recordableContent(result);
  const answer = answerOf(ctx, gen, wire, result, content ?? '[]');
  if (content === null && failure === null) failure = malformedReply(ctx, wire, UNRECORDABLE);
  const ended: StreamEnd = { answer, result, content, held, attempts, extra: resultExtra(result, extra), send };
  if (failure === null && result.complete && result.stream_error === null) await releaseStream(ctx, call, ended);
  // A client given up on as stalled is gone too (its response is destroyed; the abort it causes may come later).
  else await cutStream(ctx, call, ended, failure, stalled);
  res.end();
}

/**
 * The frames one upstream frame becomes (itself, or its translation), each as its policy says: the text to write now
 * (in one write: a translation makes several frames of one), the frames held, and whether reading ends there.
 */
function dispatchFrames(
  frames: readonly SseFrame[],
  policy: (frame: SseFrame) => FrameAction,
  held: string[],
  secrets: readonly string[],
): { out: string; ended: boolean } {
  let out = '';
  for (const frame of frames) {
    const action = policy(frame);
    if (action === 'forward' || action === 'last') out += withoutSecrets(frame.raw, secrets);
    else if (action === 'hold') held.push(withoutSecrets(frame.raw, secrets));
    if (action === 'hold' || action === 'last') return { out, ended: true };
  }
  return { out, ended: false };
}

/** A stream whose reading ended: what the reader made of it, the frames held back, and how to write to the client. */
interface StreamEnd {
  answer: ProviderResult;
  result: WireResult;
  /** The content as recorded; null when it cannot be serialised. */
  content: string | null;
  held: string[];
  attempts: Attempts;
  extra: Record<string, unknown>;
  send: (text: string) => Promise<void>;
}

/** A whole stream: its EXCHANGE committed, then the held terminal event released (or an error event in its place). */
async function releaseStream(ctx: CallContext, call: GovernedCall, ended: StreamEnd): Promise<void> {
  const { endpoint } = ctx;
  const concluded = await ctx.router.conclude(call, {
    kind: 'answered',
    answer: ended.answer,
    usageFinal: ended.result.usage_final,
    attempts: ended.attempts,
    extra: ended.extra,
  });
  noteConcluded(ctx, concluded, 'success', ended.result);
  if (concluded.unrecorded === null) {
    for (const frame of ended.held) await ended.send(frame);
    return;
  }
  logUnrecorded(concluded);
  const withheld = 'the exchange could not be recorded; the reply is withheld';
  await ended.send(errorFrame(endpoint.family, endpoint.surface, withheld, ctx.requestId));
}

/** A stream cut short (upstream failure, truncation, or the client gone): recorded as such, the client told. */
async function cutStream(
  ctx: CallContext,
  call: GovernedCall,
  ended: StreamEnd,
  failure: SendFailure | null,
  stalled: boolean,
): Promise<void> {
  const { endpoint } = ctx;
  const { result, content, held } = ended;
  const cancelled = ctx.signal.aborted || stalled;
  const code = cancelled
    ? 'CANCELLED'
    : (failure?.error_code ?? (result.stream_error === null ? 'STREAM_TRUNCATED' : 'UPSTREAM_STREAM_ERROR'));
  const message = cancelled
    ? stalled
      ? `the client read nothing for ${ctx.upstreamTimeoutMs} ms mid-stream (the upstream idle timeout), so it was treated as gone; the upstream call was aborted`
      : 'the client went away mid-stream; the upstream call was aborted'
    : (failure?.message ?? result.stream_error ?? 'the upstream stream ended before its final event');
  const concluded = await ctx.router.conclude(call, {
    kind: 'cut',
    outcome: cancelled ? 'cancelled' : 'error',
    code,
    message,
    partial: ended.answer,
    attempts: ended.attempts,
    extra: ended.extra,
  });
  noteConcluded(ctx, concluded, cancelled ? 'cancelled' : 'error', result);
  if (concluded.unrecorded !== null) logUnrecorded(concluded);
  if (cancelled) return;
  // The terminal event is released only if its content is in the record and the reader took it as the end (a
  // response.failed, say): one it could not read would tell the client a truncated reply is whole.
  if (held.length > 0 && content !== null && result.complete) for (const frame of held) await ended.send(frame);
  else if (result.stream_error === null || content === null)
    await ended.send(
      errorFrame(endpoint.family, endpoint.surface, failure ? clientMessage(ctx, failure) : message, ctx.requestId),
    );
}
