import { SegmentRegistry } from './segments.js';
import { ledgerPolicy, roleTemplate } from './templates.js';
import type { PromptMessage } from './messages.js';
import type { HistoryMessage, PromptSpec } from './spec.js';

/** Meta blocks injected at the start of a conversation; compaction must keep them out of summaries. */
export const META_BLOCK_TAGS = [
  'developer_instructions',
  'turn_context',
  'user_instructions',
  'environment_context',
] as const;
export type MetaBlockTag = (typeof META_BLOCK_TAGS)[number];

export function metaBlock(tag: MetaBlockTag | 'ledger_policy', body: string): string {
  return `<${tag}>\n${body}\n</${tag}>`;
}

/** The role message: tools, then the role template, then examples (segment-registry order). */
export function roleMessage(spec: PromptSpec): string {
  const registry = new SegmentRegistry();
  if (spec.tools && spec.tools.length > 0) {
    registry.register({
      id: 'tools',
      kind: 'tools',
      content: `# Tools\n\n${spec.tools.map((t) => `- ${t.name}: ${t.description}`).join('\n')}`,
    });
  }
  registry.register({ id: 'role', kind: 'system', content: roleTemplate(spec.role) });
  if (spec.examples && spec.examples.length > 0) {
    registry.register({ id: 'examples', kind: 'examples', content: `# Examples\n\n${spec.examples.join('\n\n')}` });
  }
  return registry.compile().stablePrefix;
}

/**
 * Developer zone (role=developer): role template, developer instructions, turn context, ledger policy.
 * The system zone never carries any of these, so one fixed system prompt serves every role.
 */
export function developerZone(spec: PromptSpec): PromptMessage[] {
  const out: PromptMessage[] = [{ role: 'developer', content: roleMessage(spec), section: 'developer' }];
  const { developer_instructions: devInstructions, turn_context: turnContext } = spec.zones;
  if (devInstructions)
    out.push({
      role: 'developer',
      content: metaBlock('developer_instructions', devInstructions),
      section: 'developer',
    });
  if (turnContext)
    out.push({ role: 'developer', content: metaBlock('turn_context', turnContext), section: 'developer' });
  out.push({ role: 'developer', content: metaBlock('ledger_policy', ledgerPolicy()), section: 'developer' });
  return out;
}

/** User-meta zone (role=user): user instructions, then environment context. */
export function userMetaZone(spec: PromptSpec): PromptMessage[] {
  const out: PromptMessage[] = [];
  const { user_instructions: userInstructions, environment_context: environment } = spec.zones;
  if (userInstructions)
    out.push({ role: 'user', content: metaBlock('user_instructions', userInstructions), section: 'user_meta' });
  if (environment)
    out.push({ role: 'user', content: metaBlock('environment_context', environment), section: 'user_meta' });
  return out;
}

export function isMetaBlock(content: string): boolean {
  const head = content.trimStart();
  return META_BLOCK_TAGS.some((tag) => head.startsWith(`<${tag}>`));
}

/** History as it may enter a compaction summary: the initial meta blocks filtered out. */
export function filterMetaBlocks<T extends Pick<HistoryMessage, 'content'>>(history: readonly T[]): T[] {
  return history.filter((message) => !isMetaBlock(message.content));
}
