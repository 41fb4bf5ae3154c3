import { readFileSync } from 'node:fs';
import { READ_LIMITS } from '../bounded-read.js';
import { readLinesBounded } from '../line-reader.js';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import { PRIVATE_FILE_MODE, writeFileAtomicWith } from '../atomic.js';
import { canonicalJson } from '../canonical.js';
import { CpError, show } from '../errors.js';
import {
  computeEntryHash,
  ENTRY_ID_PATTERN,
  GENESIS_HASH,
  HASH_PATTERN,
  type Anchor,
  type LedgerEntry,
} from './entry.js';
import { rowToEntry, type Ledger } from './ledger.js';
import {
  blockDigest,
  contentRefs,
  EMPTY_LIST,
  listDigest,
  type ContentBlockLine,
  type ContentListLine,
  type ImportContent,
} from './content.js';
import { illFormedPointer } from '../text.js';
import { jsonDepth, repeatedKey } from '../json-depth.js';
import { refuseIllFormed } from './validate.js';
import { refuseLedgerAsOutput } from './file-check.js';

type EntryValidator = ValidateFunction<LedgerEntry>;
let validator: EntryValidator | undefined;

/**
 * ajv loaded and the schema compiled on first use: every command that imports the ledger would otherwise pay
 * about 65 ms of start-up for an import it may never run.
 */
function entryValidator(): EntryValidator {
  if (!validator) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
    const schema = JSON.parse(readFileSync(new URL('./ledger-entry.schema.json', import.meta.url), 'utf8')) as object;
    validator = new Ajv({ allErrors: false, strict: true }).compile<LedgerEntry>(schema);
  }
  return validator;
}

/**
 * One entry per line, in chain order, each line the entry's RFC 8785 canonical JSON as stored. An entry written
 * through the content store is preceded by the blocks and list nodes it needs that no earlier line carried
 * (`{"content_block":{…}}`, `{"content_list":{…}}`), so the export stays as deduplicated as the store.
 */
export function* exportLines(ledger: Ledger): IterableIterator<string> {
  const sent = new Set<string>();
  for (const row of ledger.rows()) {
    const entry = rowToEntry(row);
    if (row.metadata.includes('"content":{')) {
      const refs = contentRefs(entry.metadata);
      if (refs !== undefined) yield* contentLines(ledger, [refs.prompt, refs.response], sent);
    }
    yield canonicalJson(entry);
  }
}

function* contentLines(ledger: Ledger, heads: string[], sent: Set<string>): IterableIterator<string> {
  for (const head of heads) {
    if (head === EMPTY_LIST || sent.has(head)) continue;
    for (const [digest, parent, block] of ledger.content.walkNodes(head))
      yield* newContentLines({ digest, parent, block }, () => ledger.content.block(block), sent);
  }
}

/**
 * The lines one node of a walked list adds to an export (every store's): its block, read only if no earlier line
 * carried it (undefined: not stored), then the node itself, unless an earlier line carried that.
 */
export function* newContentLines(
  node: { digest: string; parent: string; block: string },
  blockLine: () => ContentBlockLine | undefined,
  sent: Set<string>,
): IterableIterator<string> {
  const { digest, parent, block } = node;
  if (sent.has(digest)) return;
  if (!sent.has(block)) {
    const stored = blockLine();
    if (stored !== undefined) yield canonicalJson({ content_block: stored });
    sent.add(block);
  }
  yield canonicalJson({ content_list: { block, digest, parent } });
  sent.add(digest);
}

/** Write the export to `path` atomically (temp file, fsync, rename); returns the exported head. */
export function exportLedger(ledger: Ledger, path: string): Anchor {
  refuseLedgerAsOutput(ledger.path, path, 'the export');
  return writeFileAtomicWith(
    path,
    (write) => {
      let head: Anchor = { seq: 0, hash: GENESIS_HASH };
      ledger.snapshot(() => {
        let buffer = '';
        for (const line of exportLines(ledger)) {
          buffer += `${line}\n`;
          if (buffer.length > 1 << 20) {
            write(buffer);
            buffer = '';
          }
        }
        write(buffer);
        head = ledger.head();
      });
      return head;
    },
    { mode: PRIVATE_FILE_MODE },
  );
}

/**
 * Parse and re-verify an export before anything is written: every line must be a well-formed entry,
 * link to the one before it and hash to its entry_hash; ids must be unique. Throws naming the line.
 */
export function parseExport(
  text: string | Iterable<string>,
  options: { anchor?: Anchor; source?: string } = {},
): LedgerEntry[] {
  return parseExportWithContent(text, options).entries;
}

/** `parseExport`, keeping the content lines: each block re-hashed, each list node re-linked, every reference resolved. */
export function parseExportWithContent(
  text: string | Iterable<string>,
  options: { anchor?: Anchor; source?: string } = {},
): { entries: LedgerEntry[]; content: ImportContent } {
  const source = options.source ?? 'the import';
  const lines = typeof text === 'string' ? text.split('\n') : text;
  if (Array.isArray(lines) && lines[lines.length - 1] === '') lines.pop();
  const entries: LedgerEntry[] = [];
  const ids = new Set<string>();
  let previous = GENESIS_HASH;
  let index = -1;
  const content: ImportContent = { blocks: [], lists: [] };
  const blocks = new Map<string, ContentBlockLine>();
  const lists = new Set<string>([EMPTY_LIST]);
  const redactions = new Map<string, Set<string>>();
  for (const line of lines) {
    index += 1;
    if (line.startsWith('{"content_')) {
      parseContentLine(line, index + 1, source, content, blocks, lists);
      continue;
    }
    const entry = parseLine(line, index + 1, source);
    const where = `line ${index + 1} of ${source} (${entry.id})`;
    if (ids.has(entry.id))
      throw tampered(`${where} repeats an id already used on an earlier line`, index + 1, entry.id);
    if (entry.previous_hash !== previous)
      throw tampered(`${where} does not link to the entry before it`, index + 1, entry.id);
    if (computeEntryHash(entry) !== entry.entry_hash)
      throw tampered(`${where} does not hash to its entry_hash: it was edited`, index + 1, entry.id);
    const refs = contentRefs(entry.metadata);
    if (refs !== undefined && !(lists.has(refs.prompt) && lists.has(refs.response)))
      throw tampered(`${where} refers to content the export does not hold before it`, index + 1, entry.id);
    if (entry.event_type === 'REDACTED' && Array.isArray(entry.metadata.blocks))
      redactions.set(entry.id, new Set(entry.metadata.blocks.filter((b): b is string => typeof b === 'string')));
    ids.add(entry.id);
    previous = entry.entry_hash;
    entries.push(entry);
  }
  // A block without its text is accounted for only by a REDACTED entry of this chain that names it, and a block
  // such an entry names never holds its text again.
  const removedBy = new Map<string, string>();
  for (const [id, named] of redactions) for (const digest of named) removedBy.set(digest, id);
  for (const block of content.blocks) {
    if (block.text !== undefined) {
      const by = removedBy.get(block.digest);
      if (by !== undefined)
        throw tampered(
          `${source} has block ${block.digest} with its text, but REDACTED entry ${by} in it removed that block`,
          index + 1,
          by,
        );
      continue;
    }
    if (!(block.redacted_by !== undefined && redactions.get(block.redacted_by)?.has(block.digest))) {
      throw tampered(
        `${source} has block ${block.digest} without its text, and no REDACTED entry in it names that block`,
        index + 1,
        block.redacted_by ?? null,
      );
    }
  }
  const anchor = options.anchor;
  if (
    anchor &&
    (entries.length < anchor.seq ||
      (anchor.seq === 0 ? GENESIS_HASH : entries[anchor.seq - 1]?.entry_hash) !== anchor.hash)
  ) {
    throw tampered(
      `${source} does not reach the anchor ${anchor.seq}:${anchor.hash}: it was truncated or rewritten`,
      entries.length,
      null,
    );
  }
  return { entries, content };
}

/** A content line, checked against what it claims: nothing is trusted that can be recomputed. */
function parseContentLine(
  line: string,
  lineNo: number,
  source: string,
  content: ImportContent,
  blocks: Map<string, ContentBlockLine>,
  lists: Set<string>,
): void {
  const value = jsonLine(line, lineNo, source);
  const invalid = (what: string): CpError =>
    new CpError('ERR_LEDGER_IMPORT_INVALID', `line ${lineNo} of ${source} is not a content line: ${what}`, {
      hint: 'import only files written by `cplane ledger export`',
      details: { line: lineNo },
    });
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  const body = record[keys[0] as string] as Record<string, unknown> | null;
  if (keys.length !== 1 || typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('one key, content_block or content_list, holding an object');
  const hex = (v: unknown): v is string => typeof v === 'string' && HASH_PATTERN.test(v);
  if (keys[0] === 'content_block') {
    const { digest, size, text, redacted_by: by, ...rest } = body;
    if (Object.keys(rest).length > 0 || !hex(digest) || !Number.isSafeInteger(size) || (size as number) < 0)
      throw invalid('a block needs digest (64 hex), size and text or redacted_by, nothing else');
    if ((text === undefined) === (by === undefined) || (text !== undefined && typeof text !== 'string'))
      throw invalid('a block holds either its text or the REDACTED entry that removed it');
    if (by !== undefined && !(typeof by === 'string' && ENTRY_ID_PATTERN.test(by)))
      throw invalid('redacted_by must be an entry id');
    if (typeof text === 'string') {
      if (illFormedPointer(text) !== undefined) throw invalid('its text is not well-formed UTF-16');
      if (blockDigest(text) !== digest || Buffer.byteLength(text, 'utf8') !== size)
        throw tampered(
          `line ${lineNo} of ${source}: block ${digest} does not hash to its digest: it was edited`,
          lineNo,
          null,
        );
    }
    if (blocks.has(digest)) return;
    const block: ContentBlockLine =
      typeof text === 'string'
        ? { digest, size: size as number, text }
        : { digest, size: size as number, redacted_by: by as string };
    blocks.set(digest, block);
    content.blocks.push(block);
    return;
  }
  if (keys[0] === 'content_list') {
    const { digest, parent, block, ...rest } = body;
    if (Object.keys(rest).length > 0 || !hex(digest) || !hex(parent) || !hex(block))
      throw invalid('a list node needs digest, parent and block (64 hex each), nothing else');
    if (!lists.has(parent) || !blocks.has(block))
      throw tampered(
        `line ${lineNo} of ${source}: list node ${digest} needs a parent or block no earlier line holds`,
        lineNo,
        null,
      );
    if (listDigest(parent, block) !== digest)
      throw tampered(
        `line ${lineNo} of ${source}: list node ${digest} does not hash to its digest: it was edited`,
        lineNo,
        null,
      );
    if (lists.has(digest)) return;
    lists.add(digest);
    content.lists.push({ digest, parent, block } as ContentListLine);
    return;
  }
  throw invalid(`unknown kind ${show(keys[0])}`);
}

/**
 * The deepest line an export holds: SQLite's JSON functions refuse metadata past 1000 levels, so no stored entry
 * is deeper, and a line of a few million brackets would overflow every recursive walk after the parse.
 */
const MAX_LINE_DEPTH = 1001;

function jsonLine(line: string, lineNo: number, source: string): unknown {
  if (jsonDepth(line, MAX_LINE_DEPTH) > MAX_LINE_DEPTH)
    throw new CpError(
      'ERR_LEDGER_IMPORT_INVALID',
      `line ${lineNo} of ${source} nests JSON deeper than ${MAX_LINE_DEPTH} levels, which no ledger holds`,
      {
        hint: 'import only files written by `cplane ledger export`; nothing was imported',
        details: { line: lineNo },
      },
    );
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (cause) {
    throw new CpError('ERR_LEDGER_IMPORT_INVALID', `line ${lineNo} of ${source} is not JSON: ${show(line, 60)}`, {
      hint: 'import only files written by `cplane ledger export`',
      details: { line: lineNo },
      cause,
    });
  }
  // Export writes canonical JSON, which never repeats a key; only a line that differs from it needs the scan.
  const repeated = line === canonicalJson(value) ? undefined : repeatedKey(line);
  if (repeated !== undefined)
    throw new CpError(
      'ERR_LEDGER_IMPORT_INVALID',
      `line ${lineNo} of ${source} holds the key ${show(repeated)} twice in one object: readers disagree on which value it has`,
      {
        hint: 'import only files written by `cplane ledger export`; nothing was imported',
        details: { line: lineNo, key: repeated },
      },
    );
  return value;
}

function parseLine(line: string, lineNo: number, source: string): LedgerEntry {
  const value = jsonLine(line, lineNo, source);
  const validateEntry = entryValidator();
  if (!validateEntry(value)) {
    const error = validateEntry.errors?.[0];
    const at = error?.instancePath || '/';
    throw new CpError(
      'ERR_LEDGER_IMPORT_INVALID',
      `line ${lineNo} of ${source} is not a ledger entry: ${at} ${error?.message ?? 'is invalid'}`,
      {
        hint: 'each line must be one LedgerEntry (ledger-entry.schema.json)',
        details: { line: lineNo, path: at },
      },
    );
  }
  refuseIllFormed(value, `line ${lineNo} of ${source}`, lineNo);
  return value;
}

function tampered(message: string, line: number, id: string | null): CpError {
  return new CpError('ERR_LEDGER_IMPORT_TAMPERED', message, {
    hint: 'the export was altered after it was written; nothing was imported',
    details: { line, id },
  });
}

/** Read, re-verify and import an export file into an empty ledger, all or nothing. */
export function importLedger(ledger: Ledger, path: string, options: { anchor?: Anchor } = {}): Anchor {
  const { entries, content } = parseExportWithContent(readExportLines(path), { ...options, source: path });
  return ledger.importEntries(entries, content);
}

/** An export's lines, streamed: a line over the limit (or a multi-gigabyte file without newlines) is refused. */
export function readExportLines(path: string): Iterable<string> {
  return readLinesBounded(path, {
    maxLineBytes: READ_LIMITS.importLine,
    what: 'the ledger export',
    unreadableCode: 'ERR_LEDGER_IMPORT_INVALID',
    unreadableHint: 'pass the path of a file written by `cplane ledger export`',
  });
}
