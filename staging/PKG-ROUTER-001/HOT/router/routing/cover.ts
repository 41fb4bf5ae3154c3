// What a routed call's reservation covers, whichever of its alias's deployments serves it: the dearest model's price
// (the budget is reserved under it) and each distinct provider + model (its input is counted for each).
import type { Deployment } from './resolver.js';

/** The dearest model among the targets (the reservation must cover any that may answer); unpriced: the first. */
export function dearest<P>(deployments: readonly Deployment<P>[], price?: (model: string) => number | null): string {
  let best = deployments[0]?.spec.model ?? '';
  let bestPrice = Number.NEGATIVE_INFINITY;
  for (const d of deployments) {
    const p = price?.(d.spec.model) ?? null;
    if (p !== null && p > bestPrice) {
      bestPrice = p;
      best = d.spec.model;
    }
  }
  return best;
}

/** A provider and model an alias's call may be served by: what its reservation counts the body for. */
export interface Candidate<P> {
  /** The first deployment serving this pair (the others speak the same provider package, so the same format). */
  readonly deployment: string;
  readonly provider: P;
  readonly model: string;
}

/** The alias's deployments as distinct provider + model pairs (two keys to one model tokenize alike). */
export function candidates<P>(
  deployments: readonly Deployment<P>[],
  providerId: (provider: P) => string,
): Candidate<P>[] {
  const seen = new Map<string, Candidate<P>>();
  for (const d of deployments) {
    const key = `${providerId(d.provider)}\u0000${d.spec.model}`;
    if (!seen.has(key)) seen.set(key, { deployment: d.spec.id, provider: d.provider, model: d.spec.model });
  }
  return [...seen.values()];
}
