import { isUtf8 } from 'node:buffer';
import type { WireResponse } from '#providers/wire/spec.js';
import type { Concluded, GovernedCall } from '#router/governed.js';
import type { AttemptRecord } from '#router/records.js';
import type { CallContext } from './call.js';
import { answerOf, noteConcluded, recordableContent, resultExtra, UNRECORDABLE, unrecorded } from './conclusion.js';
import type { Generation } from './request-body.js';
import { withServedHeader } from './route-plan.js';
import { clientReply } from './routed.js';
import { requestIdHeader } from './surfaces.js';
import { failMalformed } from './upstream-failure.js';
import { readReply } from './upstream.js';
import { withoutSecrets } from './without-secrets.js';

export async function wholeReply(
  ctx: CallContext,
  call: GovernedCall,
  gen: Generation,
  wire: WireResponse,
  attempts: AttemptRecord[],
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

/** A whole JSON reply, released once its EXCHANGE is committed (withheld if it could be neither committed nor spooled). */
export function releaseWhole(ctx: CallContext, call: GovernedCall, concluded: Concluded, bytes: Buffer): void {
  if (concluded.unrecorded !== null) {
    unrecorded(ctx, concluded);
    return;
  }
  const reply = withoutSecrets(wellFormed(bytes), call.secrets);
  // 200 whatever 2xx the upstream said: both APIs answer 200, and a 205 (say) is a status clients read no body of.
  const headers: Record<string, string> = {
    // The body was parsed as JSON here: the upstream's label for it (text/html, say) would make an SDK read it as text.
    'content-type': 'application/json',
    'content-length': String(reply.byteLength),
  };
  // Set in turn, not a literal with a computed key and a spread (each a runtime call building the object's map).
  headers[requestIdHeader(ctx.endpoint.family)] = ctx.requestId;
  headers['x-cplane-exchange-id'] = concluded.exchangeEntryId;
  ctx.res.writeHead(200, withServedHeader(headers, ctx.servedBy ?? null));
  ctx.res.end(reply);
}

/**
 * A whole reply as the record reads it: bytes that are not UTF-8 decoded with U+FFFD in their place, as a streamed
 * reply's already are. Raw, they would reach the client as JSON that strict decoders refuse, and differ from the record.
 */
function wellFormed(bytes: Buffer): Buffer {
  return isUtf8(bytes) ? bytes : Buffer.from(bytes.toString('utf8'), 'utf8');
}
