import {
  FILE_SEPARATOR, FILE_TREE_HEADER, FILES_ACTIVE_HEADER, L0_FILES_HEADER, SYSTEM_PART_SEPARATOR,
  TIER_ACK, TIER_FILES_HEADERS, URL_ACK, URL_CONTEXT_HEADER, URL_SEPARATOR,
} from './headers.js';
import { baseSystemPrompt } from './templates.js';
import type { PromptMessage } from './messages.js';
import type { HistoryMessage, PromptSpec, SpecFile, TierName } from './spec.js';

/** Files as fenced blocks without language tags, path on the line before, joined by a blank line. */
export function formatFiles(files: readonly SpecFile[]): string {
  return files.map((file) => `${file.path}\n\`\`\`\n${file.content}\n\`\`\``).join(FILE_SEPARATOR);
}

/** The L0 system message: fixed base prompt, optional extra prompt, then the L0 reference files. */
export function systemMessage(spec: PromptSpec): string {
  const parts = [baseSystemPrompt()];
  if (spec.system_extra) parts.push(spec.system_extra);
  const files = spec.tiers?.L0?.files ?? [];
  if (files.length > 0) parts.push(L0_FILES_HEADER + formatFiles(files));
  return parts.join(SYSTEM_PART_SEPARATOR);
}

function history(messages: readonly HistoryMessage[] | undefined, section: PromptMessage['section']): PromptMessage[] {
  return (messages ?? []).map((m) => ({ role: m.role, content: m.content, section }));
}

/** One cached tier L1–L3: a user/assistant pair for its files (if any), then its native history. */
export function tierMessages(spec: PromptSpec, tier: Exclude<TierName, 'L0'>): PromptMessage[] {
  const source = spec.tiers?.[tier];
  const out: PromptMessage[] = [];
  const files = source?.files ?? [];
  if (files.length > 0) {
    out.push({ role: 'user', content: TIER_FILES_HEADERS[tier] + formatFiles(files), section: tier });
    out.push({ role: 'assistant', content: TIER_ACK, section: tier });
  }
  out.push(...history(source?.history, tier));
  return out;
}

export function l0History(spec: PromptSpec): PromptMessage[] {
  return history(spec.tiers?.L0?.history, 'L0');
}

/** The file tree as a flat, sorted, de-duplicated list (code-unit order, so it is locale-independent). */
export function fileTreeText(paths: readonly string[]): string {
  const sorted = [...new Set(paths)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `${FILE_TREE_HEADER}# File Tree (${sorted.length} files)\n\n${sorted.join('\n')}`;
}

/** Uncached context after the cached tiers: file tree, URL context, working files, active history. */
export function uncachedMessages(spec: PromptSpec): PromptMessage[] {
  const out: PromptMessage[] = [];
  if (spec.file_tree && spec.file_tree.length > 0) {
    out.push({ role: 'user', content: fileTreeText(spec.file_tree), section: 'file_tree' });
    out.push({ role: 'assistant', content: TIER_ACK, section: 'file_tree' });
  }
  if (spec.url_context && spec.url_context.length > 0) {
    const parts = spec.url_context.map((u) => `## ${u.title || u.url}\nSource: ${u.url}\n\n${u.content}`);
    out.push({ role: 'user', content: URL_CONTEXT_HEADER + parts.join(URL_SEPARATOR), section: 'url_context' });
    out.push({ role: 'assistant', content: URL_ACK, section: 'url_context' });
  }
  if (spec.active_files && spec.active_files.length > 0) {
    out.push({ role: 'user', content: FILES_ACTIVE_HEADER + formatFiles(spec.active_files), section: 'active_files' });
    out.push({ role: 'assistant', content: TIER_ACK, section: 'active_files' });
  }
  out.push(...history(spec.active_history, 'active_history'));
  return out;
}
