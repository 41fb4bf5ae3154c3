/** The Messages request's top-level fields every translation maps; a target adds the ones only it can honour. */
const MESSAGES_FIELDS = [
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'metadata',
  'thinking',
] as const;

/** The fields a translation from Messages accepts: the common ones and `more`; any other is refused by name. */
export function messagesFields(...more: string[]): ReadonlySet<string> {
  return new Set([...MESSAGES_FIELDS, ...more]);
}
