import { canonicalJson, sha256Hex } from '#kernel/canonical.js';
import { piecesOf, sha256OfPieces } from './parts.js';
import type { PromptMessage } from './messages.js';

/** Version tag inside every hashed envelope: bump it only when the hashed shape changes. */
export const PREFIX_HASH_VERSION = 'cplane-prompt-1';

export interface PrefixInput {
  instructions: string;
  /** The pieces `instructions` was assembled from, if known (hashed without joining them). */
  instructionsPieces?: readonly string[];
  instructionsBreakpoint: boolean;
  messages: readonly PromptMessage[];
  /** How many trailing messages form the dynamic tail. */
  dynamicTailMessages: number;
}

export interface PrefixHashes {
  stable_prefix_hash: string;
  dynamic_tail_hash: string;
  full_prompt_hash: string;
  cache_key: string;
}

function envelope(message: PromptMessage): { role: string; content_sha256: string; breakpoint: boolean } {
  return {
    role: message.role,
    content_sha256: sha256OfPieces(piecesOf(message), message.content),
    breakpoint: message.cache_control !== undefined,
  };
}

/**
 * Splits a prompt at the dynamic tail and hashes each side. Every content byte is hashed once (its
 * digest goes into a small canonical envelope), so hashing stays linear in the prompt size; the full
 * hash and cache key are derived from the two side hashes rather than re-reading the content.
 */
export function hashPrefix(input: PrefixInput): PrefixHashes {
  const split = Math.max(0, input.messages.length - Math.max(0, input.dynamicTailMessages));
  const stable = input.messages.slice(0, split);
  const tail = input.messages.slice(split);
  const stablePrefixHash = sha256Hex(
    canonicalJson({
      v: PREFIX_HASH_VERSION,
      instructions_sha256: sha256OfPieces(input.instructionsPieces, input.instructions),
      instructions_breakpoint: input.instructionsBreakpoint,
      messages: stable.map(envelope),
    }),
  );
  const dynamicTailHash = sha256Hex(canonicalJson({ v: PREFIX_HASH_VERSION, messages: tail.map(envelope) }));
  const fullPromptHash = sha256Hex(
    canonicalJson({ v: PREFIX_HASH_VERSION, stable_prefix_hash: stablePrefixHash, dynamic_tail_hash: dynamicTailHash }),
  );
  return {
    stable_prefix_hash: stablePrefixHash,
    dynamic_tail_hash: dynamicTailHash,
    full_prompt_hash: fullPromptHash,
    cache_key: `cp1-${stablePrefixHash.slice(0, 16)}-${dynamicTailHash.slice(0, 16)}`,
  };
}
