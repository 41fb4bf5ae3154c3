import { createHash } from 'node:crypto';
import { Lru } from './lru.js';

/** The byte-level BPE encodings OpenAI publishes for its chat models. */
export type OpenAiEncoding = 'o200k_base' | 'cl100k_base';

// A model id as clients send it (`gpt-4o-mini`, `openai/gpt-4.1`, `ft:gpt-4o-mini:org::id`), its family prefix and a
// fine-tune's `ft:` set aside. The open-weight gpt-oss models use another chat format and are served by others.
const O200K = /^(?:gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|codex-mini)(?:$|[-.:_])/;
const CL100K = /^(?:gpt-4|gpt-3\.5-turbo|gpt-35-turbo)(?:$|[-:_])/;

/** The encoding OpenAI's tokenizer uses for a model, or null for a model whose tokenizer is not OpenAI's. */
export function encodingForModel(model: string): OpenAiEncoding | null {
  const id = model.replace(/^openai\//, '').replace(/^ft:/, '');
  if (O200K.test(id)) return 'o200k_base';
  if (CL100K.test(id)) return 'cl100k_base';
  return null;
}

interface Tokenizer {
  countTokens(text: string, options: { disallowedSpecial: Set<string> }): number;
  /** The pre-tokenizer: the encoding's chunks, each encoded on its own (global, sticky-free). */
  split: RegExp;
}

/** Special-token text (`<|endoftext|>`) in a prompt is plain text to the API: counted as such, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * A string longer than this is bounded by its UTF-8 bytes rather than tokenized (about 60 ms per 100 KB on one
 * busy core): a provable bound that keeps one huge string from holding the event loop.
 */
export const MAX_TOKENIZED_CHARS = 256 * 1024;

/**
 * A pre-tokenizer chunk longer than this is bounded by its UTF-8 bytes: byte-pair merging is quadratic in a chunk's
 * length (60,000 `a`s took 3 s, a run of emoji or blanks as long), and chunks are encoded independently, so a
 * hostile run costs its bytes, never the CPU. Words, numbers and punctuation in real text are far shorter.
 */
export const MAX_CHUNK_CHARS = 256;

/** Counts kept: a key is 44 characters and a count a number, so about 2 MB at most. */
export const COUNT_CACHE_ENTRIES = 16_384;

const loading = new Map<OpenAiEncoding, Promise<Tokenizer>>();

/**
 * The encoding's tokenizer, loaded on first use only (its ranks take most of a second to load): a gateway that never
 * calls an OpenAI model never pays for it.
 */
function tokenizer(encoding: OpenAiEncoding): Promise<Tokenizer> {
  let found = loading.get(encoding);
  if (found === undefined) {
    found = Promise.all([
      encoding === 'o200k_base'
        ? import('gpt-tokenizer/encoding/o200k_base')
        : import('gpt-tokenizer/encoding/cl100k_base'),
      import('gpt-tokenizer/encodingParams/constants'),
    ]).then(([api, constants]) => ({
      countTokens: (text, options) => api.countTokens(text, options),
      split: encoding === 'o200k_base' ? constants.O200K_TOKEN_SPLIT_REGEX : constants.CL100K_TOKEN_SPLIT_REGEX,
    }));
    found.catch(() => loading.delete(encoding));
    loading.set(encoding, found);
  }
  return found;
}

/**
 * Start loading an encoding's tokenizer without waiting for it (a gateway with an OpenAI-family upstream opens so, and
 * its first call finds it loaded); a failure is met again, and answered, by the first count.
 */
export function preloadEncoder(encoding: OpenAiEncoding): void {
  tokenizer(encoding).catch(() => {});
}

/** Whether an encoding's tokenizer was loaded (start-up pays nothing until an OpenAI-family model is called). */
export function encoderLoaded(encoding: OpenAiEncoding): boolean {
  return loading.has(encoding);
}

/** Token counts of texts under one encoding, each text's count cached by its hash (bounded LRU). */
export class TextCounter {
  constructor(
    private readonly encoding: OpenAiEncoding,
    private readonly tok: Tokenizer,
    private readonly cache: Lru<number>,
  ) {}

  /** The exact token count of `text`, or its UTF-8 bytes (an upper bound) beyond MAX_TOKENIZED_CHARS. */
  count(text: string): number {
    if (text.length === 0) return 0;
    if (text.length > MAX_TOKENIZED_CHARS) return Buffer.byteLength(text, 'utf8');
    // Short texts (roles, names, ids) are their own key; longer ones are keyed by their hash, not kept whole.
    const key = text.length <= 64 ? `${this.encoding}:${text}` : `${this.encoding}#${hashOf(text)}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const counted = this.countRuns(text);
    this.cache.set(key, counted);
    return counted;
  }

  /**
   * The text's tokens: each run of ordinary chunks counted exactly (one call for a text without a long chunk), each
   * long chunk by its bytes. A cut between runs is one more token, in case the pre-tokenizer splits the text
   * around it differently than the whole.
   */
  private countRuns(text: string): number {
    let total = 0;
    let from = 0;
    for (const match of text.matchAll(this.tok.split)) {
      const chunk = match[0];
      if (chunk.length <= MAX_CHUNK_CHARS) continue;
      const at = match.index;
      if (at > from) total += this.tok.countTokens(text.slice(from, at), AS_TEXT) + 1;
      total += Buffer.byteLength(chunk, 'utf8');
      from = at + chunk.length;
    }
    if (from === 0) return this.tok.countTokens(text, AS_TEXT);
    return from < text.length ? total + this.tok.countTokens(text.slice(from), AS_TEXT) + 1 : total;
  }
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}

const counts = new Lru<number>(COUNT_CACHE_ENTRIES);

/** The counter for an encoding (its tokenizer loaded on first call); counts are shared by every call. */
export async function textCounter(encoding: OpenAiEncoding): Promise<TextCounter> {
  return new TextCounter(encoding, await tokenizer(encoding), counts);
}
