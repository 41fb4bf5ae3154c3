import {
  FILE_SEPARATOR,
  FILE_TREE_HEADER,
  FILES_ACTIVE_HEADER,
  L0_FILES_HEADER,
  SYSTEM_PART_SEPARATOR,
  TIER_ACK,
  TIER_FILES_HEADERS,
  URL_ACK,
  URL_CONTEXT_HEADER,
  URL_SEPARATOR,
} from './headers.js';
import { concat, filePieces, rememberPieces } from './parts.js';
import { baseSystemPrompt } from './templates.js';
import type { MessageRole, MessageSection, PromptMessage } from './messages.js';
import type { HistoryMessage, PromptSpec, SpecFile, TierName } from './spec.js';

/** Files as fenced blocks without language tags, path on the line before, joined by a blank line. */
export function formatFiles(files: readonly SpecFile[]): string {
  return concat(filePieces(files, FILE_SEPARATOR));
}

/** A message whose text is assembled from pieces (hashed piece by piece, see parts.ts). */
function assembled(role: MessageRole, section: MessageSection, pieces: string[]): PromptMessage {
  return rememberPieces({ role, content: concat(pieces), section }, pieces);
}

/** The L0 system message: fixed base prompt, optional extra prompt, then the L0 reference files. */
export function systemPieces(spec: PromptSpec): string[] {
  const pieces = [baseSystemPrompt()];
  if (spec.system_extra) pieces.push(SYSTEM_PART_SEPARATOR, spec.system_extra);
  const files = spec.tiers?.L0?.files ?? [];
  if (files.length > 0) pieces.push(SYSTEM_PART_SEPARATOR, L0_FILES_HEADER, ...filePieces(files, FILE_SEPARATOR));
  return pieces;
}

export function systemMessage(spec: PromptSpec): string {
  return concat(systemPieces(spec));
}

function history(messages: readonly HistoryMessage[] | undefined, section: MessageSection): PromptMessage[] {
  return (messages ?? []).map((m) => ({ role: m.role, content: m.content, section }));
}

/** One cached tier L1–L3: a user/assistant pair for its files (if any), then its native history. */
export function tierMessages(spec: PromptSpec, tier: Exclude<TierName, 'L0'>): PromptMessage[] {
  const source = spec.tiers?.[tier];
  const out: PromptMessage[] = [];
  const files = source?.files ?? [];
  if (files.length > 0) {
    out.push(assembled('user', tier, [TIER_FILES_HEADERS[tier], ...filePieces(files, FILE_SEPARATOR)]));
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
  const unique = sortedUnique(paths);
  return `${FILE_TREE_HEADER}# File Tree (${unique.length} files)\n\n${unique.join('\n')}`;
}

/** Trees usually arrive sorted (e.g. from `git ls-files`), so one pass checks before paying for a sort. */
function sortedUnique(paths: readonly string[]): readonly string[] {
  let previous = '';
  const unique: string[] = [];
  for (const path of paths) {
    if (path < previous) return sortedUnique([...paths].sort());
    if (path !== previous) unique.push(path);
    previous = path;
  }
  return unique;
}

function urlPieces(urls: NonNullable<PromptSpec['url_context']>): string[] {
  const out: string[] = [URL_CONTEXT_HEADER];
  urls.forEach((u, i) => {
    if (i > 0) out.push(URL_SEPARATOR);
    out.push('## ', u.title || u.url, '\nSource: ', u.url, '\n\n', u.content);
  });
  return out;
}

/** Uncached context after the cached tiers: file tree, URL context, working files, active history. */
export function uncachedMessages(spec: PromptSpec): PromptMessage[] {
  const out: PromptMessage[] = [];
  if (spec.file_tree && spec.file_tree.length > 0) {
    out.push({ role: 'user', content: fileTreeText(spec.file_tree), section: 'file_tree' });
    out.push({ role: 'assistant', content: TIER_ACK, section: 'file_tree' });
  }
  if (spec.url_context && spec.url_context.length > 0) {
    out.push(assembled('user', 'url_context', urlPieces(spec.url_context)));
    out.push({ role: 'assistant', content: URL_ACK, section: 'url_context' });
  }
  if (spec.active_files && spec.active_files.length > 0) {
    out.push(
      assembled('user', 'active_files', [FILES_ACTIVE_HEADER, ...filePieces(spec.active_files, FILE_SEPARATOR)]),
    );
    out.push({ role: 'assistant', content: TIER_ACK, section: 'active_files' });
  }
  out.push(...history(spec.active_history, 'active_history'));
  return out;
}
