import { statSync } from 'node:fs';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { readTextBounded } from '#kernel/bounded-read.js';
import { parsePromptSpec, type PromptSpec } from './spec.js';

/** Specs larger than this are refused before reading: ~16M tokens is beyond any provider's context. */
export const MAX_SPEC_BYTES = 64 * 1024 * 1024;

export function loadPromptSpec(path: string): PromptSpec {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_SPEC_BYTES) {
      throw new CpError(
        'ERR_PROMPT_SPEC_INVALID',
        `prompt spec ${show(path)} is ${size} bytes; the limit is ${MAX_SPEC_BYTES}`,
        {
          hint: 'move context out of the spec; no provider accepts a prompt this large',
          details: { pointer: '/', size },
        },
      );
    }
    text = readTextBounded(path, { maxBytes: MAX_SPEC_BYTES, what: 'the prompt spec' });
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError(
      'ERR_PROMPT_SPEC_UNREADABLE',
      `cannot read prompt spec ${show(path)}: ${(cause as Error).message}`,
      {
        hint: 'pass --spec with the path of a JSON spec file',
        cause,
      },
    );
  }
  return parsePromptSpec(text, path);
}
