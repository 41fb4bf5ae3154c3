// `POST /v1/embeddings` (OpenAI's shape, platform.openai.com/docs/api-reference/embeddings/create), governed like
// any generation (call.ts → the router's one pipeline): its body checked and bounded here, its reply read by the
// `openai.embeddings` reader, whose content block records how many vectors of how many dimensions, never the vectors.
import { bodyInputBounds } from '#budgeter/bound.js';
import { describe, type Generation, jsonPieces, MODEL_ID } from './request-body.js';

/** OpenAI's own ceilings: 2048 inputs a request, each at most 8192 tokens (a token array: that many ids). */
export const MAX_EMBEDDING_INPUTS = 2048;
const MAX_INPUT_TOKENS = 8192;
const ENCODINGS = new Set(['float', 'base64']);
const MAX_DIMENSIONS = 65_536;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.length <= MAX_INPUT_TOKENS && v.every((t) => Number.isSafeInteger(t) && t >= 0);

/** `input`: a string, an array of strings, an array of token ids, or an array of such arrays; empty is refused. */
function inputProblem(input: unknown): string | null {
  if (typeof input === 'string') return input === '' ? 'input: an empty string is not embedded' : null;
  if (!Array.isArray(input) || input.length === 0) return 'input: a string or a non-empty array is required';
  if (input.length > MAX_EMBEDDING_INPUTS)
    return `input: at most ${MAX_EMBEDDING_INPUTS} inputs a request, got ${input.length}`;
  if (input.every((i) => typeof i === 'string' && i !== '')) return null;
  if (isTokenArray(input) || input.every(isTokenArray)) return null;
  return 'input: each element must be a non-empty string or an array of token ids (whole numbers)';
}

/** An embeddings body checked at the edge; a problem string names what is wrong. */
export function checkEmbeddings(body: unknown): Generation | string {
  if (!isObject(body)) return 'the request body must be a JSON object';
  const { model, input } = body;
  if (typeof model !== 'string' || !MODEL_ID.test(model))
    return `model: 1-200 printable ASCII characters without spaces are required, got ${describe(model)}`;
  const problem = inputProblem(input);
  if (problem !== null) return problem;
  if (body.encoding_format !== undefined && !ENCODINGS.has(body.encoding_format as string))
    return `encoding_format: "float" or "base64" is required, got ${describe(body.encoding_format)}`;
  const dims = body.dimensions;
  if (
    dims !== undefined &&
    !(Number.isSafeInteger(dims) && (dims as number) >= 1 && (dims as number) <= MAX_DIMENSIONS)
  )
    return `dimensions: a whole number from 1 to ${MAX_DIMENSIONS} is required, got ${describe(dims)}`;
  if (body.stream !== undefined) return 'stream: embeddings are not streamed';
  // What is recorded is the input (the content store keeps each element apart); the vectors never are.
  const { whole, pieces } = jsonPieces({ input });
  const bounds = bodyInputBounds({ input }, Buffer.byteLength(whole));
  return {
    model,
    stream: false,
    upstreamBody: body,
    prompt: whole,
    promptPieces: pieces,
    clientWantsUsage: false,
    bounds: { estimated_input_tokens: bounds.bound, max_output_tokens: 0 },
    outputLimit: 0,
    inputLimit: bounds.limit,
  };
}
