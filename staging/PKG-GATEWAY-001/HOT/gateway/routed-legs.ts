// A routed call's legs: how each deployment of its alias is spoken to — in the client's own format, or translated
// into one the deployment serves (targets.ts reach) — and the body each is sent, translated once per upstream
// surface before any attempt leaves. A deployment the request cannot be carried to is left out of the call.
import type { TranslationCall, Translator, Untranslatable } from '#providers/translate/index.js';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';
import { reach } from './targets.js';

/** The deployments of an alias called on one upstream surface, and the translator there (null: the client's). */
export interface Way {
  readonly surface: WireSurface;
  readonly translator: Translator | null;
  readonly deployments: readonly string[];
}

/** An alias's deployments as seen from one client surface (streamed or not), grouped by the surface each is called on. */
export interface AliasWays {
  /** The client's surface they are reached from. */
  readonly client: WireSurface;
  readonly ways: readonly Way[];
  /** Deployment id → its index in `ways`. */
  readonly wayOf: ReadonlyMap<string, number>;
  /** Deployments no translation reaches from the client's surface. */
  readonly unreachable: readonly string[];
}

/** How an alias's deployments are reached from a client surface; built once per alias, surface and streaming. */
export function aliasWays(
  deployments: Iterable<readonly [string, Pick<WireProvider, 'surfaces'>]>,
  clientSurface: WireSurface,
  stream: boolean,
): AliasWays {
  const ways: Array<{ surface: WireSurface; translator: Translator | null; deployments: string[] }> = [];
  const wayOf = new Map<string, number>();
  const unreachable: string[] = [];
  for (const [id, provider] of deployments) {
    const found = reach(provider, clientSurface, stream);
    if (found === null) {
      unreachable.push(id);
      continue;
    }
    let index = ways.findIndex((w) => w.surface === found.surface);
    if (index < 0) index = ways.push({ ...found, deployments: [] }) - 1;
    ways[index]?.deployments.push(id);
    wayOf.set(id, index);
  }
  return { client: clientSurface, ways, wayOf, unreachable };
}

/** One deployment's leg of a call: the surface it is called on, the translator (null: none), the body it is sent. */
export interface Leg {
  readonly surface: WireSurface;
  readonly translator: Translator | null;
  readonly body: Record<string, unknown>;
}

/** A deployment a call was not sent to, and why (the EXCHANGE's `skipped_deployments`). */
export interface Skipped {
  deployment: string;
  upstream_surface: WireSurface | null;
  /** The client's field the deployment's format cannot express; null when no translation reaches it at all. */
  field: string | null;
  why: string;
}

/** The legs of one call: each upstream surface's body translated once, the deployments it cannot reach skipped. */
export class RoutedLegs {
  /** Each way's body; null where its translation refused (the refusal at the same index). */
  private readonly bodies: Array<Record<string, unknown> | null> = [];
  private readonly refusals: Array<Untranslatable | null> = [];
  readonly skipped: Skipped[] = [];

  /**
   * `own`: the body sent in the client's format (the client's, with what the gateway adds); `client`: the body as
   * the client sent it, which a translator reads.
   */
  constructor(
    readonly routes: AliasWays,
    own: Record<string, unknown>,
    client: Record<string, unknown>,
    call: TranslationCall,
  ) {
    for (const id of routes.unreachable)
      this.skipped.push({
        deployment: id,
        upstream_surface: null,
        field: null,
        why: `no translation reaches its provider from ${routes.client}`,
      });
    for (const way of routes.ways) {
      const translated = way.translator === null ? null : way.translator.request(client, call);
      this.bodies.push(translated === null ? own : translated.ok ? translated.value : null);
      this.refusals.push(translated === null || translated.ok ? null : translated.refusal);
      if (translated !== null && !translated.ok)
        for (const deployment of way.deployments)
          this.skipped.push({ deployment, upstream_surface: way.surface, ...translated.refusal });
    }
  }

  /** The deployment's leg; null for one skipped (never picked: its plan excludes it). */
  leg(deployment: string): Leg | null {
    const index = this.routes.wayOf.get(deployment);
    if (index === undefined) return null;
    const body = this.bodies[index];
    const way = this.routes.ways[index];
    if (way === undefined || body === undefined || body === null) return null;
    return { surface: way.surface, translator: way.translator, body };
  }

  /** Whether some deployment can be sent the request. */
  get reachable(): boolean {
    return this.bodies.some((b) => b !== null);
  }

  /** The first translation refusal (the field named when none of the deployments can be sent the request). */
  refusal(): { refusal: Untranslatable; translator: Translator } | null {
    for (const [i, way] of this.routes.ways.entries()) {
      const refusal = this.refusals[i];
      if (way.translator !== null && refusal) return { refusal, translator: way.translator };
    }
    return null;
  }
}
