// A ledger export read the way a person reads it: each EXCHANGE written through the content store gets its
// prompt and response text back from the export's own content lines. Written from the format's description alone
// (docs/architecture/ledger.md, no kernel code), so tests using it also check that the export carries what it claims.
import { createHash } from 'node:crypto';

export interface ExportedEntry {
  id: string;
  event_type: string;
  decision: string;
  metadata: Record<string, unknown>;
}

const EMPTY_LIST = '0'.repeat(64);
const sha256 = (text: string, encoding: 'utf8' | 'latin1'): string =>
  createHash('sha256').update(text, encoding).digest('hex');

export function entriesFromExport(text: string): ExportedEntry[] {
  const blocks = new Map<string, string>();
  const lists = new Map<string, { parent: string; block: string }>();
  const entries: ExportedEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const value = JSON.parse(line) as Record<string, unknown>;
    const block = value.content_block as { digest: string; text?: string; redacted_by?: string } | undefined;
    const list = value.content_list as { digest: string; parent: string; block: string } | undefined;
    if (block) {
      if (block.text !== undefined && sha256(block.text, 'utf8') !== block.digest)
        throw new Error(`block ${block.digest} does not hash to its digest`);
      blocks.set(block.digest, block.text ?? `[REDACTED:${block.redacted_by}]`);
    } else if (list) {
      if (sha256(list.parent + list.block, 'latin1') !== list.digest)
        throw new Error(`list node ${list.digest} does not hash to its digest`);
      lists.set(list.digest, list);
    } else {
      const entry = value as unknown as ExportedEntry;
      const content = entry.metadata.content as { prompt: string; response: string } | undefined;
      if (content) {
        const { content: _content, ...rest } = entry.metadata;
        entry.metadata = { ...rest, prompt: textOf(content.prompt), response: textOf(content.response) };
      }
      entries.push(entry);
    }
  }
  return entries;

  function textOf(head: string): string {
    const parts: string[] = [];
    for (let at = head; at !== EMPTY_LIST; ) {
      const node = lists.get(at);
      if (!node) throw new Error(`list node ${at} is not in the export`);
      const piece = blocks.get(node.block);
      if (piece === undefined) throw new Error(`block ${node.block} is not in the export`);
      parts.push(piece);
      at = node.parent;
    }
    return parts.reverse().join('');
  }
}
