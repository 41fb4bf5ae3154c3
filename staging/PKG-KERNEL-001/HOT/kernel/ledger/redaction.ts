import { CpError, show } from '../errors.js';
import type { ContentBlockLine } from './content.js';
import type { AppendInput, LedgerEntry } from './entry.js';

/**
 * What choosing the blocks of a redaction reads from a ledger. The SQLite file answers at once and PostgreSQL
 * later, so the one selection below awaits either: `ledger redact` picks the same blocks on both.
 */
export interface RedactionReader {
  /** Whether the block is stored (with its text or already redacted). */
  hasBlock(digest: string): boolean | Promise<boolean>;
  /** The EXCHANGE ids of a session, oldest first. */
  sessionExchanges(sessionId: string): string[] | Promise<string[]>;
  /** The blocks an entry's content is made of; [] when it has none in the store, undefined when there is no entry. */
  exchangeBlocks(id: string): string[] | undefined | Promise<string[] | undefined>;
  /** A block as an export line carries it, or undefined when it is not stored. */
  block(digest: string): ContentBlockLine | undefined | Promise<ContentBlockLine | undefined>;
}

/** Who asked and why, recorded in the REDACTED entry. */
export interface RedactRecord {
  reason: string;
  by: string;
  exchanges: readonly string[];
}

/** What a redaction did, on any store. */
export interface RedactResult {
  /** The REDACTED entry appended. */
  entry: LedgerEntry;
  /** Blocks whose text this redaction removed. */
  redacted: number;
  /** Blocks named that held no text already (redacted earlier). */
  already: number;
  /** Whether the removed text was also erased from the store's files, as far as that store can. */
  checkpointed: boolean;
  /** Where the text may still be, for the operator to act on (empty when nothing is left to say). */
  warnings: string[];
}

/** A store `ledger redact` can act on: it reads the selection and removes the blocks. */
export interface RedactionStore extends RedactionReader {
  redact(blocks: readonly string[], record: RedactRecord): RedactResult | Promise<RedactResult>;
}

/** Exactly one of these names what goes. */
export interface RedactionTarget {
  exchange?: string | undefined;
  session?: string | undefined;
  block?: string | undefined;
}

/**
 * The REDACTED entry for `blocks`: every store appends exactly this, so verify reads one shape. The digests are
 * sorted and unique, so the same redaction hashes the same whichever order they were named in.
 */
export function redactedAppend(
  blocks: readonly string[],
  record: RedactRecord,
): { sorted: string[]; input: AppendInput } {
  const sorted = [...new Set(blocks)].sort();
  return {
    sorted,
    input: {
      event_type: 'REDACTED',
      submission_id: 'LEDGER',
      decision: 'REDACTED',
      reason: record.reason,
      metadata: { blocks: sorted, by: record.by, exchanges: [...record.exchanges] },
    },
  };
}

/**
 * The blocks a target names and the exchanges it covers. An exchange written before the content store has its
 * text in its hash: naming it is refused rather than redacting nothing; inside a session such exchanges are
 * simply skipped, since the rest of the session can still go.
 */
export async function selectRedaction(
  reader: RedactionReader,
  target: RedactionTarget,
): Promise<{ blocks: string[]; exchanges: string[] }> {
  if (target.block !== undefined) {
    if (!(await reader.hasBlock(target.block))) throw redactNotFound(`block ${target.block}`);
    return { blocks: [target.block], exchanges: [] };
  }
  const exchanges =
    target.exchange !== undefined ? [target.exchange] : await reader.sessionExchanges(target.session as string);
  if (exchanges.length === 0) throw redactNotFound(`session ${show(target.session)} (it has no EXCHANGE)`);
  const blocks = new Set<string>();
  for (const id of exchanges) {
    const found = await reader.exchangeBlocks(id);
    if (found === undefined) throw redactNotFound(`entry ${show(id)}`);
    if (found.length === 0 && target.exchange !== undefined) {
      throw new CpError(
        'ERR_LEDGER_REDACT_INLINE',
        `entry ${show(id)} has no content in the store (written before it, or not an exchange): its text is part of its hash`,
        {
          hint: 'only content written through the content store can be redacted with the chain intact',
          details: { entry_id: id },
        },
      );
    }
    for (const block of found) blocks.add(block);
  }
  return { blocks: [...blocks], exchanges };
}

/**
 * The REDACTED entry is part of the chain and can never be redacted itself, so a reason that quotes what it
 * removes ("removed sk-ant-api03-…") would keep that text forever. Refused: any word of the reason that looks like
 * a secret or an identifier (8+ characters with a digit in them, or any 16+) and appears in a block that goes.
 * Ordinary words are not checked: "pasted API key" must stay a valid reason for a block that says "API key".
 */
export async function refuseQuotingReason(
  reader: RedactionReader,
  blocks: readonly string[],
  reason: string,
): Promise<void> {
  const words = [...new Set(reason.split(/[\s"'`()<>[\]{},;]+/u))].filter(
    (word) => word.length >= 16 || (word.length >= 8 && /\d/u.test(word)),
  );
  if (words.length === 0) return;
  for (const digest of blocks) {
    const text = (await reader.block(digest))?.text;
    if (text === undefined) continue;
    const quoted = words.find((word) => text.includes(word));
    if (quoted === undefined) continue;
    // The word itself is what must not be kept: the message names it by its start and length only.
    throw new CpError(
      'ERR_LEDGER_REDACT_REASON_QUOTES',
      `the reason quotes text of block ${digest} that it removes (${show(quoted.slice(0, 4))}…, ${quoted.length} characters): the REDACTED entry would keep it in the chain for good`,
      {
        hint: 'describe what goes without quoting it, e.g. --reason "API key pasted into a prompt"',
        details: { block: digest, quoted_prefix: quoted.slice(0, 4), quoted_length: quoted.length },
      },
    );
  }
}

/** One block as `--dry-run` lists it: enough to recognise the text without printing all of it. */
export interface BlockPreview {
  digest: string;
  size: number;
  redacted_by: string | null;
  preview: string | null;
}

export async function previewRedaction(
  reader: RedactionReader,
  blocks: readonly string[],
  chars = 60,
): Promise<BlockPreview[]> {
  const out: BlockPreview[] = [];
  for (const digest of blocks) {
    const block = await reader.block(digest);
    out.push({
      digest,
      size: block?.size ?? 0,
      redacted_by: block?.redacted_by ?? null,
      preview: block?.text === undefined ? null : block.text.slice(0, chars),
    });
  }
  return out;
}

export function redactNotFound(what: string): CpError {
  return new CpError('ERR_LEDGER_REDACT_NOT_FOUND', `the ledger holds no ${what}`, {
    hint: 'find the id with `cplane ledger query --json`; preview what would go with --dry-run',
    details: { what },
  });
}
