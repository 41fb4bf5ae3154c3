// Which upstream serves a generation: the request's model picks the provider family, whatever the client speaks.
import { type Seconds, type Translator, translatorFor } from '#providers/translate/index.js';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';
import type { Family } from './surfaces.js';

/** Where one generation goes: the provider, the surface it is called on, and the translator when that differs. */
export interface Target {
  provider: WireProvider;
  surface: WireSurface;
  translator: Translator | null;
}

/** No configured provider serves the family the model belongs to. */
export interface NoTarget {
  unavailable: Family;
}

/** The surface a family's provider is called on for a translated generation, whole or streamed (Gemini's method). */
const SURFACE_OF: Readonly<Record<Family, readonly [WireSurface, WireSurface]>> = {
  anthropic: ['anthropic.messages', 'anthropic.messages'],
  openai: ['openai.chat', 'openai.chat'],
  gemini: ['gemini.generate', 'gemini.stream'],
};

/** How a provider is spoken to for a client surface: that surface itself, or a translation into one it serves. */
export interface Reach {
  surface: WireSurface;
  translator: Translator | null;
}

/**
 * The surface a provider is called on for a client's surface (streamed or not): the client's own when the provider
 * serves it, else the first of its generation surfaces a translation reaches; null when none does.
 */
export function reach(
  provider: Pick<WireProvider, 'surfaces'>,
  clientSurface: WireSurface,
  stream: boolean,
  clock?: Seconds,
): Reach | null {
  if (provider.surfaces.includes(clientSurface)) return { surface: clientSurface, translator: null };
  for (const pair of Object.values(SURFACE_OF)) {
    const surface = pair[stream ? 1 : 0];
    if (!provider.surfaces.includes(surface)) continue;
    const translator = translatorFor(clientSurface, surface, clock);
    if (translator !== null) return { surface: translator.upstream, translator };
  }
  return null;
}

/** A model pattern (`claude-*`, `o[0-9]*`) as an anchored expression: `*` any run, `[…]` a class, the rest literal. */
export function modelPattern(pattern: string): RegExp {
  let source = '';
  for (const part of pattern.match(/\[[^\]]*\]|\*|[^*[]+|\[/g) ?? []) {
    if (part === '*') source += '.*';
    else if (part.startsWith('[') && part.endsWith(']') && part.length > 2)
      source += `[${part.slice(1, -1).replace(/[\\^\]]/g, '\\$&')}]`;
    else source += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/**
 * The model → target choice, built once from the gateway's providers by family: each provider's declared model
 * patterns (ProviderEntry.models) compiled once; a call tests a handful of them.
 */
export class Targets {
  private readonly patterns: Array<{ family: Family; pattern: RegExp }> = [];

  constructor(
    private readonly providers: ReadonlyMap<Family, WireProvider>,
    private readonly clock?: Seconds,
  ) {
    for (const [family, provider] of providers)
      for (const pattern of provider.models ?? []) this.patterns.push({ family, pattern: modelPattern(pattern) });
  }

  /** The family whose provider declares the model, or null for a model no provider declares. */
  familyOf(model: string): Family | null {
    return this.patterns.find((p) => p.pattern.test(model))?.family ?? null;
  }

  /**
   * The target for a model asked for on a client surface: the family declaring the model, translated when the
   * client speaks another; a model nobody declares, or a pair of surfaces with no translation, keeps the client's
   * own family.
   */
  targetFor(model: string, clientSurface: WireSurface, clientFamily: Family, stream = false): Target | NoTarget {
    const family = this.familyOf(model) ?? clientFamily;
    const surface = SURFACE_OF[family][stream ? 1 : 0];
    const translator = family === clientFamily ? null : translatorFor(clientSurface, surface, this.clock);
    const chosen = translator === null ? clientFamily : family;
    const provider = this.providers.get(chosen);
    if (provider === undefined) return { unavailable: chosen };
    return { provider, surface: translator?.upstream ?? clientSurface, translator };
  }
}
