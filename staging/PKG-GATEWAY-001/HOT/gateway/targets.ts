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
  // A model served only on OpenAI's Responses API (servingModel): reached through a translation there.
  if (!provider.surfaces.includes('openai.responses')) return null;
  const translator = translatorFor(clientSurface, 'openai.responses', clock);
  return translator === null ? null : { surface: translator.upstream, translator };
}

/** A provider as it serves one model: without Chat Completions for a model it serves only on its Responses API. */
export function servingModel(
  provider: Pick<WireProvider, 'surfaces' | 'responsesOnly'>,
  model: string,
): Pick<WireProvider, 'surfaces'> {
  if (!(provider.responsesOnly ?? []).some((pattern) => modelPattern(pattern).test(model))) return provider;
  return { surfaces: provider.surfaces.filter((s) => s !== 'openai.chat') };
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
  /** Per family, the models its provider serves only on its Responses API (WireProvider.responsesOnly). */
  private readonly responsesOnly = new Map<Family, RegExp[]>();

  constructor(
    private readonly providers: ReadonlyMap<Family, WireProvider>,
    private readonly clock?: Seconds,
  ) {
    for (const [family, provider] of providers) {
      for (const pattern of provider.models ?? []) this.patterns.push({ family, pattern: modelPattern(pattern) });
      const only = (provider.responsesOnly ?? []).map(modelPattern);
      if (only.length > 0) this.responsesOnly.set(family, only);
    }
  }

  /** The family whose provider declares the model, or null for a model no provider declares. */
  familyOf(model: string): Family | null {
    return this.patterns.find((p) => p.pattern.test(model))?.family ?? null;
  }

  /**
   * The target for a model asked for on a client surface: the family declaring the model, translated when the
   * client speaks another; a model nobody declares, or a pair of surfaces with no translation, keeps the client's
   * own family. A model the family's provider serves only on its Responses API goes there, translated from any
   * other surface (of its own family too).
   */
  targetFor(model: string, clientSurface: WireSurface, clientFamily: Family, stream = false): Target | NoTarget {
    const family = this.familyOf(model) ?? clientFamily;
    const responsesOnly = this.responsesOnly.get(family)?.some((p) => p.test(model)) === true;
    const surface = responsesOnly ? 'openai.responses' : SURFACE_OF[family][stream ? 1 : 0];
    const translator =
      surface === clientSurface || (family === clientFamily && !responsesOnly)
        ? null
        : translatorFor(clientSurface, surface, this.clock);
    const chosen = translator === null ? clientFamily : family;
    const provider = this.providers.get(chosen);
    if (provider === undefined) return { unavailable: chosen };
    return { provider, surface: translator?.upstream ?? clientSurface, translator };
  }
}
