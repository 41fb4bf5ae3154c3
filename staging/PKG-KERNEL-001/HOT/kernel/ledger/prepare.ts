import { canonicalJson } from '../canonical.js';
import { CpError, type ErrorCode, show } from '../errors.js';
import { wellFormed, wellFormedDeep } from '../text.js';
import type { AppendInput } from './entry.js';
import { contentRefs, prepareContent, type PreparedContent } from './content.js';
import { checkAppendInput } from './validate.js';

/** How an append treats records a crash may have left half-delivered (ledger.appendBatch, PgLedger.appendBatch). */
export interface AppendOptions {
  /**
   * Event types appended at most once per (event_type, submission_id, decision): an input of one of these kinds
   * that the chain already holds is left out, checked where appends are serialised, so two writers delivering
   * the same record (a budget outbox drained while a spool is) record it once. Inputs with content are always
   * appended. The entries returned are the ones appended.
   */
  once?: readonly string[];
  /**
   * Whether the commit must reach the disk before the append resolves (default true). False: written without its
   * own fsync (SQLite synchronous=NORMAL, PostgreSQL synchronous_commit off), made durable by the next durable
   * commit of the same store; a process crash keeps it, a power loss before that commit may not.
   */
  durable?: boolean;
  /**
   * True: the entries come back as stored, `metadata.content` holding the digests of their text, where by default
   * they show the text as a read does. A writer that keeps only the ids (the router's group commit) skips building
   * a view nobody reads.
   */
  stored?: boolean;
  /**
   * True: a durable SQLite commit waits for the disk on the caller's thread (synchronous=FULL) instead of syncing the
   * WAL on the thread pool while the event loop runs (Ledger.appendBatchDurably). For a caller with nothing else in
   * flight, which the event loop would not serve meanwhile: the hand-off to the pool and back costs a lone call more
   * than it frees. The same fsync either way; ignored by PostgreSQL.
   */
  waitHere?: boolean;
}

/** An input the chain already holds by its (event_type, submission_id, decision), among those `once` names. */
export function onceKey(
  input: Pick<PreparedAppend, 'event_type' | 'submission_id' | 'decision' | 'content'>,
  once: ReadonlySet<string>,
): string | null {
  return input.content === undefined && once.has(input.event_type)
    ? JSON.stringify([input.event_type, input.submission_id, input.decision])
    : null;
}

/**
 * Removes from `prepared`, in place, the inputs of `once` kinds that `recorded` says the chain holds, and repeats of
 * an earlier input of the batch: the one filter of every store, each asking its own database.
 */
export function dropRecorded(
  prepared: PreparedAppend[],
  once: ReadonlySet<string>,
  recorded: (input: PreparedAppend) => boolean,
): void {
  const seen = new Set<string>();
  let kept = 0;
  for (const input of prepared) {
    const key = onceKey(input, once);
    if (key !== null) {
      if (seen.has(key) || recorded(input)) continue;
      seen.add(key);
    }
    prepared[kept] = input;
    kept += 1;
  }
  prepared.length = kept;
}

/** An append validated, made well-formed and canonicalised: what any ledger store writes (and hashes). */
export interface PreparedAppend {
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
  metadataJson: string;
  content?: PreparedContent | undefined;
}

/** Validates and canonicalises one append outside any lock: the same for every ledger store. */
export function prepareAppend(input: AppendInput, index = 0): PreparedAppend {
  checkAppendInput(input, index);
  // Every field set here, so every prepared append has one shape and nothing is added to it later.
  const prepared: PreparedAppend = {
    event_type: input.event_type,
    submission_id: input.submission_id,
    decision: input.decision,
    reason: input.reason,
    metadata: input.metadata ?? {},
    metadataJson: '',
    content: undefined,
  };
  return wellFormedAppend(prepared, input, index);
}

/**
 * The entry with every string (metadata keys too) well-formed, and its metadata's canonical JSON: what is
 * hashed is exactly what SQLite stores and gives back. JSON.stringify writes a lone surrogate as a `\udXXX`
 * escape, so metadata without that text needs no walk.
 */
export function wellFormedAppend(input: PreparedAppend, raw: AppendInput, index: number): PreparedAppend {
  // Digests in metadata.content are the store's to write: a hand-made one would name content that is not there.
  if (raw.content === undefined && contentRefs(input.metadata) !== undefined) {
    throw new CpError(
      'ERR_LEDGER_ENTRY_INVALID',
      `metadata.content${index === 0 ? '' : ` (batch item ${index})`} holds content digests, which only the content store writes`,
      {
        hint: 'pass the text as content: {prompt: [...pieces], response: [...pieces]} and the ledger stores it',
        details: { field: 'metadata.content' },
      },
    );
  }
  if (raw.content !== undefined) {
    const content = prepareContent(raw.content, index === 0 ? 'content' : `content (batch item ${index})`);
    const { prompt: _prompt, response: _response, ...rest } = input.metadata;
    input.metadata = withContentRefs(rest, { prompt: content.prompt.head, response: content.response.head });
    input.content = content;
  }
  input.event_type = wellFormed(input.event_type);
  input.submission_id = wellFormed(input.submission_id);
  input.decision = wellFormed(input.decision);
  input.reason = wellFormed(input.reason);
  input.metadataJson = canonicalMetadata(input.metadata);
  if (input.metadataJson.includes('\\ud')) {
    input.metadata = wellFormedDeep(input.metadata, (key) => {
      throw new CpError(
        'ERR_LEDGER_ENTRY_INVALID',
        `metadata${index === 0 ? '' : ` (batch item ${index})`} has two keys that both read ${show(key)} once their broken UTF-16 is replaced`,
        {
          hint: 'metadata keys must be well-formed text',
          details: { field: 'metadata', key },
        },
      );
    });
    input.metadataJson = canonicalMetadata(input.metadata);
  }
  return input;
}

/**
 * `metadata` with `content` in its sorted place among keys already sorted (the router's records): its canonical
 * JSON is then one native JSON.stringify (canonical.ts), where `content` last sent every EXCHANGE to the sorting
 * serialiser. Keys out of order stay as they are: the serialiser sorts them either way.
 */
function withContentRefs(
  metadata: Record<string, unknown>,
  refs: { prompt: string; response: string },
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const key of Object.keys(metadata)) {
    // A `content` the writer also put in metadata is replaced, as the text's digests take its place.
    if (key === 'content') continue;
    if (!placed && key > 'content') {
      out.content = refs;
      placed = true;
    }
    // defineProperty: a "__proto__" key stays data, never a prototype change.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: metadata[key], enumerable: true, writable: true, configurable: true });
    else out[key] = metadata[key];
  }
  if (!placed) out.content = refs;
  return out;
}

/**
 * Metadata's canonical JSON. Metadata nested hundreds of thousands of levels (a JSON text of brackets) overflows
 * the stack of any recursive walk: it is the entry's fault, refused as SQLite refuses anything past its limit.
 */
function canonicalMetadata(metadata: Record<string, unknown>): string {
  try {
    return canonicalJson(metadata);
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message))
      throw tooDeep('ERR_LEDGER_ENTRY_INVALID', error);
    throw error;
  }
}

export function tooDeep(code: ErrorCode, cause: unknown): CpError {
  return new CpError(
    code,
    "metadata is nested too deeply for SQLite's JSON functions (about 1000 levels); nothing was written",
    {
      hint: 'flatten the metadata, or store deep values as a string',
      details: { field: 'metadata' },
      cause,
    },
  );
}
