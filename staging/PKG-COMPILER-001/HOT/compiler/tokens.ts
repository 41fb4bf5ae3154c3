/**
 * Deterministic token estimate: one token per four UTF-16 code units, rounded up. Good enough to
 * budget and compare prompts; providers report the real counts in their usage.
 */
export const CHARS_PER_TOKEN = 4;

export function estimateTokens(text: string | number): number {
  const length = typeof text === 'number' ? text : text.length;
  return Math.ceil(length / CHARS_PER_TOKEN);
}
