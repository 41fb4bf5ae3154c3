import { readFileSync } from 'node:fs';
import { READ_LIMITS } from '../bounded-read.js';
import { readLinesBounded } from '../line-reader.js';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import { writeFileAtomicWith } from '../atomic.js';
import { canonicalJson } from '../canonical.js';
import { CpError, show } from '../errors.js';
import { computeEntryHash, GENESIS_HASH, type Anchor, type LedgerEntry } from './entry.js';
import { rowToEntry, type Ledger } from './ledger.js';
import { refuseIllFormed } from './validate.js';

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

/** One entry per line, in chain order, each line the entry's RFC 8785 canonical JSON. */
export function* exportLines(ledger: Ledger): IterableIterator<string> {
  for (const row of ledger.rows()) yield canonicalJson(rowToEntry(row));
}

/** Write the export to `path` atomically (temp file, fsync, rename); returns the exported head. */
export function exportLedger(ledger: Ledger, path: string): Anchor {
  return writeFileAtomicWith(path, (write) => {
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
  });
}

/**
 * Parse and re-verify an export before anything is written: every line must be a well-formed entry,
 * link to the one before it and hash to its entry_hash; ids must be unique. Throws naming the line.
 */
export function parseExport(
  text: string | Iterable<string>,
  options: { anchor?: Anchor; source?: string } = {},
): LedgerEntry[] {
  const source = options.source ?? 'the import';
  const lines = typeof text === 'string' ? text.split('\n') : text;
  if (Array.isArray(lines) && lines[lines.length - 1] === '') lines.pop();
  const entries: LedgerEntry[] = [];
  const ids = new Set<string>();
  let previous = GENESIS_HASH;
  let index = -1;
  for (const line of lines) {
    index += 1;
    const entry = parseLine(line, index + 1, source);
    const where = `line ${index + 1} of ${source} (${entry.id})`;
    if (ids.has(entry.id))
      throw tampered(`${where} repeats an id already used on an earlier line`, index + 1, entry.id);
    if (entry.previous_hash !== previous)
      throw tampered(`${where} does not link to the entry before it`, index + 1, entry.id);
    if (computeEntryHash(entry) !== entry.entry_hash)
      throw tampered(`${where} does not hash to its entry_hash: it was edited`, index + 1, entry.id);
    ids.add(entry.id);
    previous = entry.entry_hash;
    entries.push(entry);
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
  return entries;
}

function parseLine(line: string, lineNo: number, source: string): LedgerEntry {
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
  const entries = parseExport(readExportLines(path), { ...options, source: path });
  return ledger.importEntries(entries);
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
