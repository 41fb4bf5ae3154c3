import type { Strategy } from './types.js';

/** What the picker reads of a deployment. */
export interface Pickable {
  readonly weight: number;
  readonly inFlight: number;
}

/**
 * One deployment of a group, or -1 when none is eligible: weighted random over the eligible ones (`random` in
 * [0, 1)), or, for least_in_flight, weighted random among the eligible ones with the fewest calls in flight. Two
 * passes over the group, no allocation: a group is the operator's list (tens), never the call history.
 */
export function pick<T extends Pickable>(
  group: readonly T[],
  eligible: (candidate: T, index: number) => boolean,
  strategy: Strategy,
  random: () => number,
): number {
  let total = 0;
  let fewest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < group.length; i += 1) {
    const candidate = group[i] as T;
    if (!eligible(candidate, i)) continue;
    if (strategy === 'least_in_flight') {
      if (candidate.inFlight < fewest) {
        fewest = candidate.inFlight;
        total = 0;
      } else if (candidate.inFlight > fewest) continue;
    }
    total += candidate.weight;
  }
  if (total <= 0) return -1;
  let point = random() * total;
  let last = -1;
  for (let i = 0; i < group.length; i += 1) {
    const candidate = group[i] as T;
    if (!eligible(candidate, i)) continue;
    if (strategy === 'least_in_flight' && candidate.inFlight !== fewest) continue;
    last = i;
    point -= candidate.weight;
    if (point < 0) return i;
  }
  // Rounding can leave point at a hair above 0 after the last candidate: it is the one.
  return last;
}
