// OpenAI's embeddings reply (platform.openai.com/docs/api-reference/embeddings): `{object: "list", data: [{object:
// "embedding", index, embedding}], model, usage: {prompt_tokens, total_tokens}}`, each embedding an array of floats
// or, with `encoding_format: "base64"`, the base64 of their little-endian float32 bytes. What is recorded is the
// shape of the answer (how many vectors, of how many dimensions), never the vectors.
import { asObject, getCount, getObject, type JsonObject } from '../json.js';
import type { Usage } from '../spec.js';
import { boundedRaw, emptyResult, shortField } from '../wire/reader.js';
import type { WireReader, WireResult } from '../wire/spec.js';

/** Embeddings bill their input only: `prompt_tokens`, with no output or cache bucket (known 0 once it is given). */
export function embeddingsUsage(usage: JsonObject | null): Usage {
  const input = getCount(usage, 'prompt_tokens');
  const zero = input === null ? null : 0;
  return { input_tokens: input, output_tokens: zero, cache_read_tokens: zero, cache_write_tokens: zero, raw: usage };
}

/** One vector's dimensions: a float array's length, or a base64 float32 string's byte length / 4. */
function dimensionsOf(embedding: unknown): { dimensions: number; encoding: 'float' | 'base64' } | null {
  if (Array.isArray(embedding)) return { dimensions: embedding.length, encoding: 'float' };
  if (typeof embedding !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(embedding)) return null;
  const bytes =
    Math.floor((embedding.length * 3) / 4) - (embedding.endsWith('==') ? 2 : embedding.endsWith('=') ? 1 : 0);
  return bytes % 4 === 0 ? { dimensions: bytes / 4, encoding: 'base64' } : null;
}

export class EmbeddingsReader implements WireReader {
  private readonly state: WireResult = emptyResult();
  private usage: JsonObject | null = null;

  body(value: unknown): string | null {
    const body = asObject(value);
    if (body === null || !Array.isArray(body.data)) return 'not an embeddings list (no data array)';
    const dims = new Set<number>();
    let encoding: string | null = null;
    for (const item of body.data) {
      const shape = dimensionsOf(asObject(item)?.embedding);
      if (shape === null) return 'an embedding that is neither an array of numbers nor base64 float32';
      dims.add(shape.dimensions);
      encoding = shape.encoding;
    }
    const dimensions = dims.size === 1 ? [...dims][0] : dims.size === 0 ? 0 : [...dims].sort((a, b) => a - b);
    this.state.blocks = [{ type: 'embeddings', count: body.data.length, dimensions, encoding }];
    this.state.model = shortField(body, 'model');
    this.state.stop_reason = 'stop';
    this.usage = getObject(body, 'usage');
    this.state.usage_final = this.usage !== null;
    this.state.complete = true;
    return null;
  }

  /** The embeddings API does not stream. */
  event(): void {}

  result(): WireResult {
    const usage =
      this.usage === null ? embeddingsUsage(null) : { ...embeddingsUsage(this.usage), raw: boundedRaw(this.usage) };
    return { ...this.state, usage };
  }
}
