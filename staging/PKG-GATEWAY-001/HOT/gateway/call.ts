import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sha256Hex } from '#kernel/canonical.js';
import { type SseFrame, SseParser } from '#providers/wire/sse.js';
import type { WireProvider, WireResponse, WireResult } from '#providers/wire/spec.js';
import { redact } from '#providers/redact.js';
import { TranslationRefused, type Translator } from '#providers/translate/index.js';
import type { ProviderResult } from '#providers/spec.js';
import type { Concluded, GovernedCall, GovernedRequest } from '#router/governed.js';
import type { AttemptRecord } from '#router/records.js';
import type { PromptRequest } from '#router/request.js';
import type { Router } from '#router/router.js';
import { classify, type SendFailure } from '#router/send.js';
import { sendJson, write } from './http-io.js';
import type { Identity } from './identity.js';
import type { RequestLog } from './log.js';
import { checkGeminiGeneration } from './gemini-body.js';
import { failureFor } from './refusals.js';
import type { GatewayRouting } from './routing.js';
import type { RoutePlan } from '#router/routing/resolver.js';
import { checkGeneration, describe, type FrameAction, framePolicy, MODEL_ID, type Generation } from './request-body.js';
import {
  errorBody,
  errorFrame,
  passedQuery,
  requestIdHeader,
  type Endpoint,
  type ErrorKind,
  type Family,
} from './surfaces.js';
import { clientFrames, clientReply, routeGeneration, untranslatable } from './routed.js';
import type { Targets } from './targets.js';

/** What the server hands a call: the client family's provider (null: none configured) and the model → target choice. */
export interface IncomingCall extends Omit<CallContext, 'provider' | 'translator'> {
  provider: WireProvider | null;
  targets: Targets;
}

export interface CallContext {
  router: Router;
  /** The provider called: the client family's, the one the model's family names (targets.ts), or a routed call's
   * deployment that answered, once one has. */
  provider: WireProvider;
  /** Set when the provider speaks another format than the client: the request and the reply are translated. */
  translator: Translator | null;
  routing: GatewayRouting | null;
  /** A routed call's way through its alias's deployments (set before admission); null: not routed. */
  plan?: RoutePlan<WireProvider> | null;
  /** `deployment/model` of the deployment that answered a routed call (the x-cplane-served-by header). */
  servedBy?: string | null;
  endpoint: Endpoint;
  identity: Identity;
  body: unknown;
  bytes: Buffer;
  /** The query string as the client sent it, without its '?'. */
  search: string;
  requestId: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** Fires when the client goes away (or the drain gives up on the call). */
  signal: AbortSignal;
  log: RequestLog;
  upstreamTimeoutMs: number;
  /** The call's deadline (GatewayOptions.callDeadlineMs), and the performance.now() it falls at; null: none. */
  deadline: { ms: number; at: number } | null;
  refuse(code: string, message: string, retryAfterMs?: number | null): void;
  fail(family: Family, status: number, kind: ErrorKind, message: string, extra?: Record<string, string>): void;
}

/** Headers the upstream must see as the client sent them. */
function passedHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = req.headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** The breaker and EXCHANGE model of a call that names none (GET /v1/models). */
const NO_MODEL = 'models';

/**
 * count_tokens and models: round-trips to the provider like any other, so governed like any other — auth, the
 * breaker, DISPATCH, the one retry loop, one EXCHANGE holding the upstream's answer — with a zero budget bound
 * (the upstream bills nothing for them) and zero usage.
 */
export async function handlePassThrough(incoming: IncomingCall): Promise<void> {
  const { provider } = incoming;
  // The server answers 503 before calling here when the family has no provider.
  if (provider === null) throw new Error('a pass-through call reached its handler without a provider');
  const ctx: CallContext = { ...incoming, provider, translator: null };
  const { endpoint, identity, router } = ctx;
  const checked = passThroughRequest(ctx);
  if (typeof checked === 'string') {
    const { agent, session, token } = identity;
    const refused = { contract_id: endpoint.surface, agent_id: agent, session_id: session };
    return refuseMalformed(ctx, { ...refused, ...(token === null ? {} : { auth_token: token }) }, checked);
  }
  const { model, query } = checked;
  ctx.log.model = model === NO_MODEL ? null : model;
  const post = endpoint.method === 'POST';
  const prompt = post ? ctx.bytes.toString('utf8') : new URLSearchParams(query).toString();
  const request = governedRequest(ctx, prompt, model);
  const route = await routeOf(ctx, request);
  if (route === false) return;
  const admission = await router.admit({
    request,
    bounds: { estimated_input_tokens: 0, max_output_tokens: 0 },
    contextHash: sha256Hex(ctx.bytes),
    route,
  });
  if (!admission.ok) return ctx.refuse(admission.code, admission.message, admission.retryAfterMs);
  const call = admission.call;
  const extra = { gateway_request_id: ctx.requestId, stream: false, surface: endpoint.surface };
  const body = post ? (ctx.body as Record<string, unknown>) : null;
  const sent = await sendUpstream(ctx, call, body, extra, query);
  if (!sent.ok) return;
  const wire = sent.result;
  const text = await readReply(ctx, call, wire, sent.attempts, extra);
  if (text === null) return;
  const problem = passThroughProblem(text);
  if (problem !== null) return failMalformed(ctx, call, wire, sent.attempts, extra, problem);
  const zero = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, raw: null };
  const concluded = await router.conclude(call, {
    kind: 'answered',
    answer: {
      provider_id: ctx.provider.id,
      model,
      content: text.toString('utf8'),
      stop_reason: 'stop',
      raw_stop_reason: null,
      usage: zero,
      request_id: wire.requestId,
      latency_ms: 0,
    },
    usageFinal: true,
    attempts: sent.attempts,
    extra: routedExtra(ctx, { ...extra, upstream_request_id: wire.requestId }),
  });
  noteConcluded(ctx, concluded, 'success');
  releaseWhole(ctx, call, concluded, text);
}

/**
 * A count_tokens or models request's model and upstream query, or why it is refused: the upstream would refuse
 * it too, but only after a round-trip the gateway had already governed and recorded.
 */
function passThroughRequest(ctx: CallContext): { model: string; query: Record<string, string> } | string {
  const { body, endpoint } = ctx;
  if (endpoint.method === 'POST' && (typeof body !== 'object' || body === null || Array.isArray(body)))
    return 'the request body must be a JSON object';
  const named = endpoint.params?.model ?? (body as { model?: unknown } | null)?.model;
  if (named !== undefined && (typeof named !== 'string' || !MODEL_ID.test(named)))
    return `model: 1-200 printable ASCII characters without spaces are required, got ${describe(named)}`;
  const query = passedQuery(endpoint.surface, ctx.search);
  if (typeof query === 'string') return query;
  return { model: named ?? NO_MODEL, query };
}

/**
 * A call's plan when its model is a routing alias (null when it is not: the family's upstream serves it); false
 * once refused (an alias whose deployments do not speak the client's surface). The key's `model:` scopes apply to
 * each deployment's upstream model as well as to the alias (the admission checks the alias).
 */
async function routeOf(
  ctx: CallContext,
  request: GovernedRequest['request'],
): Promise<RoutePlan<WireProvider> | null | false> {
  if (ctx.routing === null) return null;
  const plan = ctx.routing.plan(request.model_id, ctx.translator?.upstream ?? ctx.endpoint.surface, (model) =>
    ctx.router.mayUseModel(request, model),
  );
  if (typeof plan === 'string') {
    await refuseMalformed(ctx, request, plan);
    return false;
  }
  ctx.plan = plan;
  return plan;
}

/** A routed call's EXCHANGE names the alias asked for and the deployment that served (the attempts name the rest). */
function routedExtra(ctx: CallContext, extra: Record<string, unknown>): Record<string, unknown> {
  const plan = ctx.plan;
  if (plan === null || plan === undefined) return extra;
  return { ...extra, model_alias: plan.alias, served_by: ctx.servedBy ?? null };
}

/** The header a routed reply carries: who served it. */
function servedHeader(servedBy: string | null): Record<string, string> {
  return servedBy === null ? {} : { 'x-cplane-served-by': servedBy };
}

/** A request the surface cannot read: PROMPT_REJECTED (the key rides along, router/refusal-sampler.ts), then 400. */
async function refuseMalformed(
  ctx: Pick<CallContext, 'router' | 'refuse'>,
  request: Partial<PromptRequest>,
  problem: string,
): Promise<void> {
  await ctx.router.recordRefusal(request, 'VALIDATION_FAILED', problem);
  ctx.refuse('VALIDATION_FAILED', problem);
}

/** What the records name for a call on this surface, from the client's identity headers. */
function governedRequest(ctx: CallContext, prompt: string, model: string): GovernedRequest['request'] {
  const { identity } = ctx;
  return {
    contract_id: ctx.endpoint.surface,
    agent_id: identity.agent || 'UNKNOWN',
    session_id: identity.session,
    ...(identity.workOrder === null ? {} : { work_order_id: identity.workOrder }),
    prompt,
    provider_id: ctx.provider.id,
    model_id: model,
    request_id: ctx.requestId,
    ...(identity.token === null ? {} : { auth_token: identity.token }),
  };
}

/** A whole reply's bytes; null once a failure to read them is concluded and answered. */
async function readReply(
  ctx: CallContext,
  call: GovernedCall,
  wire: WireResponse,
  attempts: AttemptRecord[],
  extra: Record<string, unknown>,
): Promise<Buffer | null> {
  try {
    return await readAll(wire);
  } catch (error) {
    const failure = classify(error);
    const concluded = await ctx.router.conclude(call, { kind: 'failed', failure, attempts, extra });
    noteConcluded(ctx, concluded, ctx.signal.aborted ? 'cancelled' : 'error');
    failUpstream(ctx, failure);
    return null;
  }
}

/** A 2xx reply that is no answer: concluded as a malformed reply, answered as an upstream failure. */
async function failMalformed(
  ctx: CallContext,
  call: GovernedCall,
  wire: WireResponse,
  attempts: AttemptRecord[],
  extra: Record<string, unknown>,
  problem: string,
): Promise<void> {
  const failure = malformedReply(ctx, wire, problem);
  noteConcluded(ctx, await ctx.router.conclude(call, { kind: 'failed', failure, attempts, extra }), 'error');
  failUpstream(ctx, failure);
}

/** A whole JSON reply, released once its EXCHANGE is committed (withheld if it could be neither committed nor spooled). */
function releaseWhole(ctx: CallContext, call: GovernedCall, concluded: Concluded, bytes: Buffer): void {
  if (concluded.unrecorded !== null) {
    unrecorded(ctx, concluded);
    return;
  }
  const reply = withoutSecrets(wellFormed(bytes), call.secrets);
  // 200 whatever 2xx the upstream said: both APIs answer 200, and a 205 (say) is a status clients read no body of.
  ctx.res.writeHead(200, {
    // The body was parsed as JSON here: the upstream's label for it (text/html, say) would make an SDK read it as text.
    'content-type': 'application/json',
    'content-length': String(reply.byteLength),
    [requestIdHeader(ctx.endpoint.family)]: ctx.requestId,
    'x-cplane-exchange-id': concluded.exchangeEntryId,
    ...servedHeader(ctx.servedBy ?? null),
  });
  ctx.res.end(reply);
}

/**
 * The upstream call inside the one retry loop; a failure is concluded (EXCHANGE, settlement) and answered here.
 * An attempt counts as sent once it left while the client was still there: a client gone before that costs nothing.
 */
async function sendUpstream(
  ctx: CallContext,
  call: GovernedCall,
  body: Record<string, unknown> | null,
  extra: Record<string, unknown>,
  query: Record<string, string> = {},
): Promise<{ ok: true; result: WireResponse; attempts: AttemptRecord[] } | { ok: false }> {
  const { router } = ctx;
  let sentUpstream = false;
  const sent = await router.attempts(
    call,
    () => {
      sentUpstream ||= !ctx.signal.aborted;
      return callProvider(ctx, body, query);
    },
    ctx.signal,
    (wire) => wire.requestId,
  );
  if (sent.ok) {
    const plan = ctx.plan;
    if (plan) {
      // The reply is read with the reader of the deployment that answered it.
      const target = plan.target;
      ctx.provider = target.provider;
      ctx.servedBy = `${target.deployment}/${target.model}`;
    }
    return { ok: true, result: sent.result, attempts: sent.attempts };
  }
  const concluded = await router.conclude(call, {
    kind: 'failed',
    failure: sent.failure,
    attempts: sent.attempts,
    extra: routedExtra(ctx, extra),
    unsent: !sentUpstream,
  });
  noteConcluded(ctx, concluded, sent.failure.kind === 'cancelled' ? 'cancelled' : 'error');
  failUpstream(ctx, sent.failure);
  return { ok: false };
}

/** The provider call itself, one attempt: the only place the gateway speaks the provider contract. */
function callProvider(
  ctx: CallContext,
  body: Record<string, unknown> | null,
  query: Record<string, string>,
): Promise<WireResponse> {
  const target = ctx.plan?.target;
  // A routed attempt asks the deployment for its own model: the client named the alias.
  const sent = target === undefined || body === null ? body : { ...body, model: target.model };
  return (target?.provider ?? ctx.provider).call(
    {
      surface: ctx.translator?.upstream ?? ctx.endpoint.surface,
      body: sent,
      headers: passedHeaders(ctx.req),
      query,
      ...(ctx.endpoint.params === undefined ? {} : { params: ctx.endpoint.params }),
    },
    {
      signal: ctx.signal,
      timeoutMs: ctx.upstreamTimeoutMs,
      ...(ctx.deadline === null ? {} : { deadlineMs: Math.max(1, Math.ceil(ctx.deadline.at - performance.now())) }),
    },
  );
}

function failUpstream(ctx: CallContext, failure: SendFailure): void {
  const answer = failureFor(failure, ctx.endpoint.family);
  ctx.log.outcome = 'error';
  const extra: Record<string, string> = {};
  if (failure.retry_after_ms !== null) extra['retry-after'] = String(Math.ceil(failure.retry_after_ms / 1000));
  ctx.fail(ctx.endpoint.family, answer.status, answer.kind, clientMessage(ctx, failure), extra);
}

/** Failures without an upstream answer are described, not quoted: their text names the upstream's address. */
const UNANSWERED = new Set(['network', 'timeout', 'malformed_response', 'internal', 'cancelled']);

/** What the client is told about an upstream failure (the ledger keeps the whole message). */
function clientMessage(ctx: CallContext, failure: SendFailure): string {
  if (!UNANSWERED.has(failure.kind)) return scrubbedMessage(ctx, failure.message);
  // The gateway's own limit, not the upstream's failure: said as such, so the caller knows what to change.
  if (failure.kind === 'timeout' && ctx.deadline !== null && performance.now() >= ctx.deadline.at)
    return `the call ran past the gateway's call deadline of ${ctx.deadline.ms} ms (gateway.call_deadline_ms) and was cut (${failure.error_code})`;
  const status = failure.status === null ? '' : ` (HTTP ${failure.status})`;
  const when = failure.after_success ? ' after the reply began' : '';
  return `upstream ${failure.kind.replace('_', ' ')}${status}${when} (${failure.error_code})`;
}

/** Upstream error text is already redacted of the upstream key by the provider; the client's token too, here. */
function scrubbedMessage(ctx: CallContext, message: string): string {
  const token = ctx.identity.token;
  return token !== null && token.length >= 4 ? message.split(token).join('[REDACTED]') : message;
}

async function readAll(wire: WireResponse): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of wire.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * A generation: validate → auth → budget reserve → breaker → DISPATCH (router.admit) → upstream through the one
 * retry loop (a retry only ever follows a reply whose headers said failure, so never a byte the client saw) →
 * the reply forwarded as it arrives, its terminal event held → EXCHANGE + settlement committed → the held
 * event (or the non-streaming body) released.
 */
export async function handleGeneration(incoming: IncomingCall): Promise<void> {
  const { endpoint, identity, router } = incoming;
  const gen =
    endpoint.family === 'gemini'
      ? checkGeminiGeneration(endpoint.surface, incoming.body, endpoint.params?.model ?? '')
      : checkGeneration(endpoint.surface, incoming.body);
  if (typeof gen === 'string') {
    const { agent, session, workOrder, token } = identity;
    return refuseMalformed(
      incoming,
      {
        contract_id: endpoint.surface,
        agent_id: agent || 'UNKNOWN',
        session_id: session,
        ...(workOrder === null ? {} : { work_order_id: workOrder }),
        ...(token === null ? {} : { auth_token: token }),
      },
      gen,
    );
  }
  incoming.log.model = gen.model;
  const routed = await routeGeneration(incoming, gen);
  if (routed === null) return;
  const { ctx, upstreamBody } = routed;
  const request = governedRequest(ctx, gen.prompt, gen.model);
  const route = await routeOf(ctx, request);
  if (route === false) return;
  const admission = await router.admit({
    request,
    route,
    bounds: gen.bounds,
    outputLimit: gen.outputLimit,
    inputLimit: gen.inputLimit,
    contextHash: sha256Hex(ctx.bytes),
    promptPieces: gen.promptPieces,
  });
  if (!admission.ok) return ctx.refuse(admission.code, admission.message, admission.retryAfterMs);
  const call = admission.call;
  const extra: Record<string, unknown> = {
    gateway_request_id: ctx.requestId,
    stream: gen.stream,
    surface: endpoint.surface,
  };
  if (ctx.translator !== null) extra.upstream_surface = ctx.translator.upstream;
  const sent = await sendUpstream(ctx, call, upstreamBody, extra);
  if (!sent.ok) return;
  const wire = sent.result;
  const attempts = sent.attempts;
  const finalExtra = routedExtra(ctx, { ...extra, upstream_request_id: wire.requestId });
  if (gen.stream) return streamReply(ctx, call, gen, wire, attempts, finalExtra);
  return wholeReply(ctx, call, gen, wire, attempts, finalExtra);
}

type Attempts = AttemptRecord[];

async function wholeReply(
  ctx: CallContext,
  call: GovernedCall,
  gen: Generation,
  wire: WireResponse,
  attempts: Attempts,
  extra: Record<string, unknown>,
): Promise<void> {
  const bytes = await readReply(ctx, call, wire, attempts, extra);
  if (bytes === null) return;
  const reader = ctx.provider.reader(ctx.translator?.upstream ?? ctx.endpoint.surface);
  let problem: string | null;
  let json: unknown = null;
  try {
    json = JSON.parse(bytes.toString('utf8')) as unknown;
    problem = reader.body(json);
  } catch {
    problem = 'not JSON';
  }
  const result = reader.result();
  const content = problem === null ? recordableContent(result) : null;
  if (problem !== null || content === null)
    return failMalformed(ctx, call, wire, attempts, extra, problem ?? UNRECORDABLE);
  const reply = clientReply(ctx.translator, json, bytes);
  if (typeof reply === 'string') return failMalformed(ctx, call, wire, attempts, extra, reply);
  const concluded = await ctx.router.conclude(call, {
    kind: 'answered',
    answer: answerOf(ctx, gen, wire, result, content),
    usageFinal: result.usage_final,
    attempts,
    extra: resultExtra(result, extra),
  });
  noteConcluded(ctx, concluded, 'success', result);
  releaseWhole(ctx, call, concluded, reply);
}

function malformedReply(ctx: CallContext, wire: WireResponse, problem: string): SendFailure {
  return {
    kind: 'malformed_response',
    error_code: 'MALFORMED_RESPONSE',
    status: wire.status,
    retryable: false,
    retry_after_ms: null,
    message: `provider ${JSON.stringify(ctx.provider.id)} answered HTTP ${wire.status} with a malformed body: ${problem}`,
    after_success: true,
  };
}

/**
 * Why a count_tokens or models 2xx body is no answer, or null. Both APIs answer with a JSON object; anything else
 * (an HTML page from a proxy, an empty or compressed body, an error object sent with a 2xx) would reach the client
 * as a success its SDK cannot read, and be recorded as one.
 */
function passThroughProblem(bytes: Buffer): string | null {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const { type, error } = value as { type?: unknown; error?: unknown };
  if (type === 'error' || (typeof error === 'object' && error !== null)) return 'an error object';
  return null;
}

/**
 * A whole reply as the record reads it: bytes that are not UTF-8 decoded with U+FFFD in their place, as a streamed
 * reply's already are. Raw, they would reach the client as JSON that strict decoders refuse, and differ from the record.
 */
function wellFormed(bytes: Buffer): Buffer {
  return isUtf8(bytes) ? bytes : Buffer.from(bytes.toString('utf8'), 'utf8');
}

/**
 * Upstream bytes as the client may see them: an upstream (or a proxy before it) that reflects the request's
 * headers would otherwise hand the client the gateway's own provider key. The keys are replaced as the records
 * replace them; bytes without one are passed on untouched. A key split across two stream events is beyond a
 * per-event check; the record, scrubbed whole, still never holds it.
 */
function withoutSecrets<T extends string | Buffer>(upstream: T, secrets: readonly string[]): T {
  // Checked on the bytes as they are: most replies hold no key, and a Buffer is decoded only when one does.
  if (!secrets.some((secret) => secret.length >= 4 && upstream.includes(secret))) return upstream;
  const text = redact(typeof upstream === 'string' ? upstream : upstream.toString('utf8'), secrets);
  return (typeof upstream === 'string' ? text : Buffer.from(text, 'utf8')) as T;
}

async function streamReply(
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
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    [requestIdHeader(endpoint.family)]: ctx.requestId,
    ...servedHeader(ctx.servedBy ?? null),
  });
  res.flushHeaders();
  let failure: SendFailure | null = null;
  try {
    // The terminal event (or an error event) ends the reply: an upstream that holds its connection open past it (or
    // drops it before closing the body cleanly) is not waited on; leaving the loop closes the body and its connection.
    reading: for await (const chunk of wire.body) {
      for (const upstream of parser.push(chunk)) {
        if (upstream.data !== null) reader.event(upstream.event, upstream.data);
        const { out, ended } = dispatchFrames(translate(upstream), policy, held, call.secrets);
        if (out !== '') await send(out);
        if (ended) break reading;
      }
    }
  } catch (error) {
    failure = error instanceof TranslationRefused ? malformedReply(ctx, wire, untranslatable(error)) : classify(error);
  }
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

/** A reply whose content (a tool input, say) nests too deep to serialise cannot be recorded, so is not released. */
const UNRECORDABLE = 'its content is nested too deep to be recorded';

/** The reply's content blocks as the EXCHANGE records them, or null when they cannot be serialised. */
function recordableContent(result: WireResult): string | null {
  try {
    return JSON.stringify(result.blocks);
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

function answerOf(
  ctx: CallContext,
  gen: Generation,
  wire: WireResponse,
  result: WireResult,
  content: string,
): ProviderResult {
  return {
    provider_id: ctx.provider.id,
    model: result.model ?? gen.model,
    content,
    stop_reason: result.stop_reason,
    raw_stop_reason: result.raw_stop_reason,
    usage: result.usage,
    // An upstream sending no request id header (Gemini) names the reply in its body.
    request_id: wire.requestId ?? result.response_id ?? null,
    latency_ms: 0,
  };
}

function resultExtra(result: WireResult, extra: Record<string, unknown>): Record<string, unknown> {
  const named = extra.upstream_request_id ?? result.response_id ?? null;
  return { ...extra, upstream_request_id: named, raw_stop_reason: result.raw_stop_reason };
}

function noteConcluded(ctx: CallContext, concluded: Concluded, outcome: string, result?: WireResult): void {
  ctx.log.exchange_id = concluded.exchangeEntryId || null;
  ctx.log.outcome = outcome;
  ctx.log.cost = concluded.cost;
  if (result) {
    ctx.log.input_tokens = result.usage.input_tokens;
    ctx.log.output_tokens = result.usage.output_tokens;
    ctx.log.cache_read_tokens = result.usage.cache_read_tokens;
    ctx.log.cache_write_tokens = result.usage.cache_write_tokens;
  }
}

/** Neither committed nor spooled: the records go to stderr (the operator's only copy), the client gets an error. */
function logUnrecorded(concluded: Concluded): void {
  process.stderr.write(`cplane serve: EXCHANGE_NOT_RECORDED: ${JSON.stringify(concluded.unrecorded)}\n`);
}

function unrecorded(ctx: CallContext, concluded: Concluded): void {
  logUnrecorded(concluded);
  sendJson(
    ctx.res,
    500,
    errorBody(
      ctx.endpoint.family,
      'api_error',
      'the exchange could not be recorded; the reply is withheld',
      ctx.requestId,
      500,
    ),
    { [requestIdHeader(ctx.endpoint.family)]: ctx.requestId, 'x-should-retry': 'false' },
  );
}
