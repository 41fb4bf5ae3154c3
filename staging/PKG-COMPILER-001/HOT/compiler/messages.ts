/** Where a message came from in the assembly; renderers and compaction use it, hashes ignore it. */
export type MessageSection =
  | 'developer'
  | 'user_meta'
  | 'L0'
  | 'L1'
  | 'L2'
  | 'L3'
  | 'file_tree'
  | 'url_context'
  | 'active_files'
  | 'active_history'
  | 'user_prompt'
  | 'current_prompt';

export type MessageRole = 'developer' | 'user' | 'assistant';

/** One provider-neutral message of a compiled prompt (wire shape: snake_case). */
export interface PromptMessage {
  role: MessageRole;
  content: string;
  section: MessageSection;
  /** Present on the last message of a cached tier: the provider may cache everything up to here. */
  cache_control?: { type: 'ephemeral' };
}

export const EPHEMERAL = { type: 'ephemeral' } as const;
