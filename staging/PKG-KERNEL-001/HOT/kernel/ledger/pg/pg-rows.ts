import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Built } from '../build.js';
import { type ContentBlockLine, EMPTY_LIST, type PreparedSide } from '../content.js';
import type { EntryRow } from '../rows.js';
import { COPY_NULL, copyBytea, copyText } from './copy-text.js';
import { COPY_CHUNK, COPY_SQL } from './pg-sql.js';

export const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
export const hex = (digest: string): Buffer => Buffer.from(digest, 'hex');

/** A list node as walked, with its block as an export line (undefined: the block is not stored). */
export interface WalkedNode {
  digest: string;
  parent: string;
  block: string;
  line: ContentBlockLine | undefined;
}

export interface WalkRow {
  d: string;
  p: string;
  b: string;
  size: number | null;
  text: Buffer | null;
  redacted_by: string | null;
}

export interface Rows {
  blocks: { digest: Buffer[]; size: number[]; text: Buffer[] };
  lists: { digest: Buffer[]; parent: Buffer[]; block: Buffer[] };
}

/** The pool, or one connection inside a transaction (an export's snapshot). */
export type Queryable = pg.Pool | pg.PoolClient;

/** Streams the rows in chunks as they are hashed (into `entries`): the server inserts some while the next are hashed. */
export async function copyRows(
  client: pg.PoolClient,
  hashed: Iterable<Built>,
  entries: Built[],
  headSeq: number,
): Promise<void> {
  const stream = client.query(copyFrom(COPY_SQL));
  const done = finished(stream);
  // The server may refuse a row (a lost race) while later ones are still being hashed: its error is what `done`
  // rejects with, awaited below; meanwhile nothing more is written.
  let refused = false;
  done.catch(() => {
    refused = true;
  });
  try {
    let text = '';
    for (const built of hashed) {
      if (refused) break;
      const i = entries.push(built) - 1;
      const { entry, metadataJson } = built;
      const session = indexedText(entry.metadata.session_id);
      const agent = indexedText(entry.metadata.agent_id);
      text += `${headSeq + i + 1}\t${copyText(entry.id)}\t${copyText(entry.event_type)}\t${copyBytea(entry.submission_id)}\t${copyBytea(entry.decision)}\t${copyBytea(entry.reason)}\t${copyText(metadataJson)}\t${copyText(entry.timestamp)}\t${copyText(entry.previous_hash)}\t${copyText(entry.entry_hash)}\t${session === null ? COPY_NULL : copyBytea(session)}\t${agent === null ? COPY_NULL : copyBytea(agent)}\n`;
      if ((i + 1) % COPY_CHUNK === 0) {
        stream.write(text);
        text = '';
        // Lets the connection send it (and read the server's go-ahead) before the next chunk is encoded.
        await new Promise(setImmediate);
      }
    }
    if (!refused) stream.end(text);
  } catch (error) {
    // Hashing failed half-way: CopyFail, so the server abandons the COPY and the connection can roll back.
    stream.destroy(error as Error);
    await done.catch(() => undefined);
    throw error;
  }
  await done;
}

/** The parameters $1..$12 of APPEND_ONE_SQL: one entry at `seq`. */
export function oneRowColumns({ entry, metadataJson }: Built, seq: number): unknown[] {
  return [
    seq,
    entry.id,
    entry.event_type,
    utf8(entry.submission_id),
    utf8(entry.decision),
    utf8(entry.reason),
    metadataJson,
    entry.timestamp,
    entry.previous_hash,
    entry.entry_hash,
    indexed(entry.metadata.session_id),
    indexed(entry.metadata.agent_id),
  ];
}

/** A walked row as walk() and walkSince() give it. */
export function walkedNode(row: WalkRow): WalkedNode {
  return {
    digest: row.d,
    parent: row.p,
    block: row.b,
    line:
      row.size === null
        ? undefined
        : row.text !== null
          ? { digest: row.b, size: row.size, text: row.text.toString('utf8') }
          : { digest: row.b, size: row.size, ...(row.redacted_by === null ? {} : { redacted_by: row.redacted_by }) },
  };
}

/** The parameters $1..$6 of CONTENT_SQL and APPEND_WITH_CONTENT_SQL. */
export function contentValues(content: Rows): unknown[] {
  const { blocks, lists } = content;
  return [blocks.digest, blocks.size, blocks.text, lists.digest, lists.parent, lists.block];
}

/** A row of cplane_entries as the stores' common EntryRow (free text back from the UTF-8 bytes that are hashed). */
export function entryRowOf(row: Record<string, unknown>): EntryRow {
  return {
    seq: Number(row.seq),
    id: row.id as string,
    event_type: row.event_type as string,
    submission_id: (row.submission_id as Buffer).toString('utf8'),
    decision: (row.decision as Buffer).toString('utf8'),
    reason: (row.reason as Buffer).toString('utf8'),
    metadata: row.metadata as string,
    timestamp: row.timestamp as string,
    previous_hash: row.previous_hash as string,
    entry_hash: row.entry_hash as string,
  };
}

export function indexedText(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function indexed(value: unknown): Buffer | null {
  return typeof value === 'string' && value !== '' ? utf8(value) : null;
}

/** The parameters $1..$12 of APPEND_SQL (and APPEND_WITH_CONTENT_SQL's $7..$18): the entries from `headSeq` + 1. */
export function batchColumns(entries: readonly Built[], headSeq: number): unknown[] {
  return [
    entries.map((_, i) => headSeq + i + 1),
    entries.map((e) => e.entry.id),
    entries.map((e) => e.entry.event_type),
    entries.map((e) => utf8(e.entry.submission_id)),
    entries.map((e) => utf8(e.entry.decision)),
    entries.map((e) => utf8(e.entry.reason)),
    entries.map((e) => e.metadataJson),
    entries.map((e) => e.entry.timestamp),
    entries.map((e) => e.entry.previous_hash),
    entries.map((e) => e.entry.entry_hash),
    entries.map((e) => indexed(e.entry.metadata.session_id)),
    entries.map((e) => indexed(e.entry.metadata.agent_id)),
  ];
}

/** No content rows: a batch without exchange text. */
export function noContentRows(): Rows {
  return { blocks: { digest: [], size: [], text: [] }, lists: { digest: [], parent: [], block: [] } };
}

/** The content rows of `sides` past the longest prefix of each that `stored` holds, each block and node once. */
export function contentRowsPast(sides: readonly PreparedSide[], stored: ReadonlySet<string>): Rows {
  const rows = noContentRows();
  const seenBlocks = new Set<string>();
  const seenNodes = new Set<string>();
  for (const side of sides) {
    let known = side.nodes.length;
    while (known > 0 && !stored.has(side.nodes[known - 1] as string)) known -= 1;
    for (let i = known; i < side.nodes.length; i += 1) {
      const node = side.nodes[i] as string;
      const block = side.blocks[i] as string;
      if (!seenBlocks.has(block)) {
        seenBlocks.add(block);
        const text = utf8(side.texts[i] as string);
        rows.blocks.digest.push(hex(block));
        rows.blocks.size.push(text.byteLength);
        rows.blocks.text.push(text);
      }
      if (!seenNodes.has(node)) {
        seenNodes.add(node);
        rows.lists.digest.push(hex(node));
        rows.lists.parent.push(hex(i === 0 ? EMPTY_LIST : (side.nodes[i - 1] as string)));
        rows.lists.block.push(hex(block));
      }
    }
  }
  return rows;
}
