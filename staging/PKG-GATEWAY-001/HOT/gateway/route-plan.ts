import type { WireProvider } from '#providers/wire/spec.js';
import type { GovernedRequest } from '#router/governed.js';
import type { RoutePlan } from '#router/routing/resolver.js';
import type { CallContext } from './call.js';
import { refuseMalformed } from './governed-request.js';

/**
 * A call's plan when its model is a routing alias (null when it is not: the family's upstream serves it); false
 * once refused. A generation's deployments its request cannot be carried to are left out (routed.ts set its legs);
 * a pass-through call (count_tokens, models) goes only to deployments that speak its surface, and is refused when
 * none does. The key's `model:` scopes apply to each deployment's upstream model as well as to the alias (the
 * admission checks the alias).
 */
export async function routeOf(
  ctx: CallContext,
  request: GovernedRequest['request'],
): Promise<RoutePlan<WireProvider> | null | false> {
  if (ctx.routing === null) return null;
  const plan = ctx.routing.plan(request.model_id, (model) => ctx.router.mayUseModel(request, model));
  if (plan === null) return null;
  const legs = ctx.legs;
  if (legs) {
    plan.exclude(legs.skipped.map((s) => s.deployment));
    plan.surfaceOf = (deployment) => legs.leg(deployment)?.surface ?? null;
  } else {
    const ways = ctx.routing.ways(plan.alias, ctx.endpoint.surface, false);
    const own = ways?.ways.findIndex((w) => w.translator === null) ?? -1;
    if (ways === null || own < 0) {
      const problem = `model alias ${JSON.stringify(plan.alias)} has no deployment that speaks ${ctx.endpoint.surface}`;
      await refuseMalformed(ctx, request, problem);
      return false;
    }
    plan.exclude([...ways.unreachable, ...ways.ways.flatMap((w, i) => (i === own ? [] : w.deployments))]);
    const surface = ctx.endpoint.surface;
    plan.surfaceOf = () => surface;
  }
  ctx.plan = plan;
  return plan;
}

/** A routed call's EXCHANGE names the alias asked for and the deployment that served (the attempts name the rest). */
export function routedExtra(ctx: CallContext, extra: Record<string, unknown>): Record<string, unknown> {
  const plan = ctx.plan;
  if (plan === null || plan === undefined) return extra;
  const routed: Record<string, unknown> = { ...extra, model_alias: plan.alias, served_by: ctx.servedBy ?? null };
  // The surface the answering deployment was called on, when it is not the client's (as an unrouted translation).
  if (ctx.translator !== null && routed.upstream_surface === undefined)
    routed.upstream_surface = ctx.translator.upstream;
  const skipped = ctx.legs?.skipped ?? [];
  if (skipped.length > 0) routed.skipped_deployments = skipped;
  return routed;
}

/** `headers` with the header a routed reply carries last: who served it. */
export function withServedHeader(headers: Record<string, string>, servedBy: string | null): Record<string, string> {
  if (servedBy !== null) headers['x-cplane-served-by'] = servedBy;
  return headers;
}
