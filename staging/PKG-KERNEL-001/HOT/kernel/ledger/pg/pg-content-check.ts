import type pg from 'pg';
import { blockDigest, contentRefs, EMPTY_LIST, listDigest } from '../content.js';
import { parseStoredMetadata } from '../rows.js';
import type { ContentSummary } from '../store.js';
import { coded } from './pg-errors.js';
import { hex } from './pg-rows.js';
import { pgSchemaProblems } from './pg-schema-check.js';
import { MAX_CONTENT_PROBLEMS, VERIFY_PAGE_ROWS, VERIFY_TEXT_BYTES } from './pg-sql.js';

/**
 * Every block and list node re-hashed (for verify and migrate), as the SQLite file's verify judges them: a block
 * without its text passes only when the REDACTED entry it names is in the chain and names it back, and a block
 * or list node that a stored node points to must be there. A superuser can disable the triggers that keep these
 * tables append-only; this is what catches what was done then.
 */
export async function pgContentProblems(pool: pg.Pool): Promise<ContentSummary> {
  // Read now, not at open: verify judges the tables as they are.
  const problems: string[] = (await coded(pgSchemaProblems(pool))).slice(0, MAX_CONTENT_PROBLEMS);
  // The first ones, as SQLite's verify keeps them: a store tampered with wholesale does not fill memory with words.
  const problem = (message: string): void => {
    if (problems.length < MAX_CONTENT_PROBLEMS) problems.push(message);
  };
  // The REDACTED entries blocks name, read as named (after the page that showed the block emptied, so a redaction
  // committed meanwhile is seen whole: its entry and its UPDATE are one transaction).
  const redactions = new Map<string, Set<string>>();
  const names = async (id: string, digest: string): Promise<boolean> => {
    let named = redactions.get(id);
    if (named === undefined) {
      const r = await pool.query("SELECT metadata FROM cplane_entries WHERE id = $1 AND event_type = 'REDACTED'", [id]);
      const blocks = (r.rows[0] as { metadata: string } | undefined)?.metadata;
      const listed = blocks === undefined ? undefined : parseStoredMetadata({ id, metadata: blocks }).blocks;
      named = new Set(Array.isArray(listed) ? listed.filter((b): b is string => typeof b === 'string') : []);
      redactions.set(id, named);
    }
    return named.has(digest);
  };
  // Every REDACTED entry committed before the blocks are read: a block one of them names that holds text again
  // had it put back outside the ledger (its digest still matches). One committed later empties its blocks in
  // the same transaction, so the pages below never see its blocks with text.
  const removedBy = new Map<string, string>();
  const known = await pool.query("SELECT id, metadata FROM cplane_entries WHERE event_type = 'REDACTED'");
  for (const row of known.rows as { id: string; metadata: string }[]) {
    let listed: unknown;
    try {
      listed = (JSON.parse(row.metadata) as { blocks?: unknown } | null)?.blocks;
    } catch {
      // Metadata that is not JSON is the chain check's finding; such an entry names no block.
    }
    const named = new Set(Array.isArray(listed) ? listed.filter((b): b is string => typeof b === 'string') : []);
    redactions.set(row.id, named);
    for (const digest of named) removedBy.set(digest, row.id);
  }
  // Page by digest, the text fetched a bounded number of bytes at a time: a store of any size is verified in
  // bounded memory.
  let blocks = 0;
  let redacted = 0;
  let after: Buffer = Buffer.alloc(0);
  for (;;) {
    const page = await pool.query(
      `SELECT digest, size, text IS NULL AS gone, redacted_by FROM cplane_content_blocks
       WHERE digest > $1 ORDER BY digest LIMIT ${VERIFY_PAGE_ROWS}`,
      [after],
    );
    const rows = page.rows as { digest: Buffer; size: number; gone: boolean; redacted_by: string | null }[];
    if (rows.length === 0) break;
    blocks += rows.length;
    after = (rows[rows.length - 1] as { digest: Buffer }).digest;
    let batch: Buffer[] = [];
    let batchBytes = 0;
    const sizes = new Map<string, number>();
    const check = async (): Promise<void> => {
      if (batch.length === 0) return;
      const texts = await pool.query('SELECT digest, text FROM cplane_content_blocks WHERE digest = ANY($1)', [batch]);
      for (const t of texts.rows as { digest: Buffer; text: Buffer | null }[]) {
        const d = t.digest.toString('hex');
        // Emptied since the page was read: by a redaction committed meanwhile, which the next verify judges.
        if (t.text === null) continue;
        if (t.text.byteLength !== sizes.get(d) || blockDigest(t.text.toString('utf8')) !== d)
          problem(`block ${d} was edited`);
        else if (removedBy.has(d))
          problem(`block ${d} holds text, but REDACTED entry ${removedBy.get(d)} removed it: it was put back`);
      }
      batch = [];
      batchBytes = 0;
    };
    for (const b of rows) {
      const d = b.digest.toString('hex');
      if (b.gone) {
        if (b.redacted_by !== null && (await names(b.redacted_by, d))) redacted += 1;
        else
          problem(
            `block ${d} has no text and no REDACTED entry in the chain names it: it was removed outside \`cplane ledger redact\``,
          );
        continue;
      }
      sizes.set(d, b.size);
      batch.push(b.digest);
      batchBytes += b.size;
      if (batchBytes >= VERIFY_TEXT_BYTES) await check();
    }
    await check();
  }
  let lists = 0;
  after = Buffer.alloc(0);
  for (;;) {
    const page = await pool.query(
      `SELECT digest, parent, block FROM cplane_content_lists WHERE digest > $1 ORDER BY digest LIMIT ${VERIFY_PAGE_ROWS}`,
      [after],
    );
    const rows = page.rows as { digest: Buffer; parent: Buffer; block: Buffer }[];
    if (rows.length === 0) break;
    lists += rows.length;
    after = (rows[rows.length - 1] as { digest: Buffer }).digest;
    for (const l of rows) {
      const d = l.digest.toString('hex');
      if (listDigest(l.parent.toString('hex'), l.block.toString('hex')) !== d) problem(`list node ${d} was edited`);
    }
  }
  // Every list an entry commits to must be stored: a deleted head node has no child left to miss it.
  let afterSeq = 0;
  for (;;) {
    const page = await pool.query(
      `SELECT seq, id, metadata FROM cplane_entries WHERE seq > $1 AND strpos(metadata, '"content":{') > 0
       ORDER BY seq LIMIT ${VERIFY_PAGE_ROWS}`,
      [afterSeq],
    );
    const rows = page.rows as { seq: string; id: string; metadata: string }[];
    if (rows.length === 0) break;
    afterSeq = Number((rows[rows.length - 1] as { seq: string }).seq);
    const named = new Map<string, string>();
    for (const row of rows) {
      const refs = contentRefs(parseStoredMetadata(row));
      if (refs === undefined) continue;
      for (const head of [refs.prompt, refs.response])
        if (head !== EMPTY_LIST && !named.has(head)) named.set(head, row.id);
    }
    if (named.size === 0) continue;
    const missing = await pool.query(
      `SELECT encode(d, 'hex') AS d FROM unnest($1::bytea[]) AS d
       WHERE NOT EXISTS (SELECT 1 FROM cplane_content_lists WHERE digest = d)`,
      [[...named.keys()].map(hex)],
    );
    for (const m of missing.rows as { d: string }[])
      problem(`list node ${m.d} (the content of entry ${named.get(m.d)}) is missing: it was deleted`);
  }
  const orphans = await pool.query(
    `SELECT encode(l.digest, 'hex') AS d, encode(l.parent, 'hex') AS p, encode(l.block, 'hex') AS b,
       p.digest IS NOT NULL AS has_parent, b.digest IS NOT NULL AS has_block
     FROM cplane_content_lists l
     LEFT JOIN cplane_content_lists p ON p.digest = l.parent LEFT JOIN cplane_content_blocks b ON b.digest = l.block
     WHERE (l.parent <> $1 AND p.digest IS NULL) OR b.digest IS NULL LIMIT ${MAX_CONTENT_PROBLEMS}`,
    [hex(EMPTY_LIST)],
  );
  for (const o of orphans.rows as { d: string; p: string; b: string; has_parent: boolean; has_block: boolean }[]) {
    if (!o.has_block) problem(`block ${o.b} (in list node ${o.d}) is missing: it was deleted`);
    if (!o.has_parent) problem(`list node ${o.p} (parent of ${o.d}) is missing: it was deleted`);
  }
  return { blocks, lists, redacted_blocks: redacted, problems };
}
