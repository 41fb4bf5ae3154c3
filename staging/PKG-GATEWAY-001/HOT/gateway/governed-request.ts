import type { GovernedRequest } from '#router/governed.js';
import type { PromptRequest } from '#router/request.js';
import type { CallContext } from './call.js';

/** A request the surface cannot read: PROMPT_REJECTED (the key rides along, router/refusal-sampler.ts), then 400. */
export async function refuseMalformed(
  ctx: Pick<CallContext, 'router' | 'refuse'>,
  request: Partial<PromptRequest>,
  problem: string,
): Promise<void> {
  await ctx.router.recordRefusal(request, 'VALIDATION_FAILED', problem);
  ctx.refuse('VALIDATION_FAILED', problem);
}

/** What a refusal before admission names: the surface and the client's identity headers. */
export function refusedRequest({
  endpoint,
  identity,
}: Pick<CallContext, 'endpoint' | 'identity'>): Partial<PromptRequest> {
  return {
    contract_id: endpoint.surface,
    agent_id: identity.agent || 'UNKNOWN',
    session_id: identity.session,
    ...(identity.workOrder === null ? {} : { work_order_id: identity.workOrder }),
    ...(identity.token === null ? {} : { auth_token: identity.token }),
  };
}

/** What the records name for a call on this surface, from the client's identity headers. */
export function governedRequest(ctx: CallContext, prompt: string, model: string): GovernedRequest['request'] {
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
