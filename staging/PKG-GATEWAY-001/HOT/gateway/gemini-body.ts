import { IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, TOOL_USE_OVERHEAD_TOKENS } from '#budgeter/bound.js';
import type { WireSurface } from '#providers/wire/spec.js';
import {
  DEFAULT_OUTPUT_BOUND,
  describe,
  type Generation,
  jsonPieces,
  MAX_OUTPUT_TOKENS,
  MODEL_ID,
} from './request-body.js';

/** A generateContent body's conversation, as recorded, in this order; the rest (generationConfig, …) apart. */
const PROMPT_KEYS = ['tools', 'toolConfig', 'systemInstruction', 'contents'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function count(value: unknown, name: string, max: number): number | null | string {
  if (value === undefined || value === null) return null;
  return Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= max
    ? (value as number)
    : `${name}: a whole number from 1 to ${max} is required, got ${describe(value)}`;
}

/**
 * A generateContent or streamGenerateContent body checked at the edge; the model is the one its path named. The
 * output bound is `generationConfig.maxOutputTokens` (thinking included, as Gemini counts it) times
 * `candidateCount`, else the default bound; no usage is refused as beyond it (`outputLimit` null).
 */
export function checkGeminiGeneration(surface: WireSurface, body: unknown, model: string): Generation | string {
  if (!isObject(body)) return 'the request body must be a JSON object';
  if (!MODEL_ID.test(model)) return `model: 1-200 printable ASCII characters are required, got ${describe(model)}`;
  if (!Array.isArray(body.contents) || body.contents.length === 0) return 'contents: a non-empty array is required';
  const config = body.generationConfig;
  if (config !== undefined && config !== null && !isObject(config)) return 'generationConfig: must be an object';
  const max = count(
    isObject(config) ? config.maxOutputTokens : undefined,
    'generationConfig.maxOutputTokens',
    MAX_OUTPUT_TOKENS,
  );
  const candidates = count(
    isObject(config) ? config.candidateCount : undefined,
    'generationConfig.candidateCount',
    100,
  );
  if (typeof max === 'string') return max;
  if (typeof candidates === 'string') return candidates;
  // A stream's chunks interleave the candidates, and its end is the first candidate's finish: one only.
  if (surface === 'gemini.stream' && candidates !== null && candidates > 1)
    return 'generationConfig.candidateCount: streamGenerateContent is served for one candidate; use generateContent for more';
  const prompt: Record<string, unknown> = {};
  for (const key of PROMPT_KEYS) if (body[key] !== undefined) prompt[key] = body[key];
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if ((PROMPT_KEYS as readonly string[]).includes(key)) continue;
    Object.defineProperty(rest, key, { value: body[key], enumerable: true, writable: true, configurable: true });
  }
  const { whole, pieces } = jsonPieces(prompt);
  const input = geminiInputBounds(body, Buffer.byteLength(whole) + Buffer.byteLength(JSON.stringify(rest)));
  return {
    model,
    stream: surface === 'gemini.stream',
    upstreamBody: body,
    prompt: whole,
    promptPieces: pieces,
    clientWantsUsage: false,
    bounds: {
      estimated_input_tokens: input.bound,
      max_output_tokens: (max ?? DEFAULT_OUTPUT_BOUND) * (candidates ?? 1),
    },
    outputLimit: null,
    inputLimit: input.limit,
  };
}

/** Media parts anywhere in a body: images (inline), and what its bytes do not bound (files, audio, video, PDFs). */
function mediaIn(value: unknown, found: { images: number; unbounded: number }, depth = 0): void {
  if (depth > 64 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) mediaIn(item, found, depth + 1);
    return;
  }
  const part = value as Record<string, unknown>;
  if (isObject(part.inlineData)) {
    const mime = String(part.inlineData.mimeType ?? '');
    if (mime.startsWith('image/')) found.images += 1;
    else found.unbounded += 1;
  }
  if (isObject(part.fileData)) found.unbounded += 1;
  for (const key in part) mediaIn(part[key], found, depth + 1);
}

/**
 * The input bound of a Gemini body, as `bodyInputBounds` bounds the other formats: its JSON's bytes, a template
 * overhead per turn, system instruction and function declaration, the tool-use overhead, and an image's tokens per
 * inline image. Uploaded files, inline audio, video or documents, and a `cachedContent` reference are billed by what
 * their bytes here do not show: the body then has no input limit.
 */
export function geminiInputBounds(
  body: Record<string, unknown>,
  jsonBytes: number,
): { bound: number; limit: number | null } {
  const turns = Array.isArray(body.contents) ? body.contents.length : 0;
  const system = body.systemInstruction === undefined ? 0 : 1;
  let declarations = 0;
  if (Array.isArray(body.tools))
    for (const tool of body.tools)
      declarations += isObject(tool) && Array.isArray(tool.functionDeclarations) ? tool.functionDeclarations.length : 1;
  const media = { images: 0, unbounded: 0 };
  mediaIn(body.contents, media);
  mediaIn(body.systemInstruction, media);
  const bound =
    jsonBytes +
    MESSAGE_OVERHEAD_TOKENS * (turns + system + declarations + 1) +
    (declarations > 0 ? TOOL_USE_OVERHEAD_TOKENS : 0) +
    IMAGE_TOKENS * media.images;
  const unbounded = media.unbounded > 0 || body.cachedContent !== undefined;
  return { bound, limit: unbounded ? null : bound };
}
