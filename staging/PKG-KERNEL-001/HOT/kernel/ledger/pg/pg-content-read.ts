import { EMPTY_LIST, type ReadPieces, type ReadSide } from '../content.js';
import type { PgLedger, WalkedNode } from './pg-ledger.js';

/**
 * ContentStore.read and readPieces on PostgreSQL: the same text, markers and flags, from PgLedger's walks. A
 * block with neither text nor a redaction reads `[MISSING…]` as on SQLite (PostgreSQL keeps blocks uncompressed,
 * so there is no `[DAMAGED…]`).
 */
export async function pgReadSide(store: PgLedger, head: string): Promise<ReadSide> {
  const out: ReadSide = { text: '', redacted_by: [], missing: false };
  if (head === EMPTY_LIST) return out;
  const nodes = await store.walk(head);
  const oldest = nodes[0];
  if (oldest === undefined || oldest.parent !== EMPTY_LIST) {
    out.missing = true;
    out.text = `[MISSING:${oldest === undefined ? head : oldest.parent}]`;
  }
  const parts: string[] = [out.text];
  for (const node of nodes) {
    const text = nodeText(node, out.redacted_by);
    if (text === undefined) {
      out.missing = true;
      parts.push(`[MISSING:${node.block}]`);
    } else parts.push(text);
  }
  out.text = parts.join('');
  return out;
}

/** The blocks of `head` after the list `since`, or all of them when `since` is not a prefix of it. */
export async function pgReadPieces(store: PgLedger, head: string, since: string = EMPTY_LIST): Promise<ReadPieces> {
  const out: ReadPieces = { pieces: [], continues: since === EMPTY_LIST, redacted_by: [], missing: false };
  if (head === EMPTY_LIST || head === since) return { ...out, continues: true };
  let nodes = await store.walkSince(head, since);
  let first = nodes[0];
  if (since !== EMPTY_LIST && first?.parent !== since) {
    nodes = await store.walkSince(head, EMPTY_LIST);
    first = nodes[0];
  } else out.continues = true;
  if (first === undefined || (first.parent !== EMPTY_LIST && first.parent !== since)) {
    out.missing = true;
    out.pieces.push(`[MISSING:${first === undefined ? head : first.parent}]`);
  }
  for (const node of nodes) {
    const text = nodeText(node, out.redacted_by);
    if (text === undefined) {
      out.missing = true;
      out.pieces.push('[MISSING]');
    } else out.pieces.push(text);
  }
  return out;
}

/** A node's block as read: its text, or its redaction's marker (noted in `redactedBy`); undefined when missing. */
function nodeText(node: WalkedNode, redactedBy: string[]): string | undefined {
  const { line } = node;
  if (line?.text !== undefined) return line.text;
  if (line?.redacted_by === undefined) return undefined;
  if (!redactedBy.includes(line.redacted_by)) redactedBy.push(line.redacted_by);
  return `[REDACTED:${line.redacted_by}]`;
}
