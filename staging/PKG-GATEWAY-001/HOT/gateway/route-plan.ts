import type { WireProvider } from '#providers/wire/spec.js';
import type { GovernedRequest } from '#router/governed.js';
import type { RoutePlan } from '#router/routing/resolver.js';
import type { CallContext } from './call.js';
import { refuseMalformed } from './governed-request.js';

/**
 * A call's plan when its model is a routing alias (null when it is not: the family's upstream serves it); false
 * once refused (an alias whose deployments do not speak the client's surface). The key's `model:` scopes apply to
 * each deployment's upstream model as well as to the alias (the admission checks the alias).
 */
export async function routeOf(
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
export function routedExtra(ctx: CallContext, extra: Record<string, unknown>): Record<string, unknown> {
  const plan = ctx.plan;
  if (plan === null || plan === undefined) return extra;
  return { ...extra, model_alias: plan.alias, served_by: ctx.servedBy ?? null };
}

/** The header a routed reply carries: who served it. */
export function servedHeader(servedBy: string | null): Record<string, string> {
  return servedBy === null ? {} : { 'x-cplane-served-by': servedBy };
}
