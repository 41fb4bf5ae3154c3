import { readTextBounded } from '../../bounded-read.js';
import { isCpError } from '../../errors.js';
import type { CheckpointFinding, CheckpointKey } from '../checkpoint.js';
import type { RootCheckpointReport } from '../checkpoint-check.js';
import { ledgerOrigin } from './ledger-proofs.js';
import {
  MAX_NOTE_BYTES,
  type NoteSignature,
  noteVerifier,
  openNote,
  parseCheckpointBody,
  splitNote,
  type TreeHead,
} from './note.js';

/** Whether a checkpoint file holds a C2SP signed note (its first line an origin) rather than cplane's JSON. */
export function isNoteFile(path: string): boolean {
  try {
    const text = readTextBounded(path, { maxBytes: MAX_NOTE_BYTES, what: 'checkpoint' });
    return !text.trimStart().startsWith('{');
  } catch {
    return false;
  }
}

/** The chain's tree as verify recomputed it: its identity, size, and root at the sizes the notes sign. */
export interface ChainRoots {
  ledgerId: string;
  size: number;
  rootAt(size: number): Buffer | undefined;
  /** The smallest size at which the stored tiles give another root than the chain's (Infinity: none). */
  tilesDamagedFrom: number;
}

/** The sizes the notes name (unverified, read only to keep the chain's roots at them while it is walked). */
export function noteSizes(files: readonly string[]): Set<number> {
  const sizes = new Set<number>();
  for (const file of files) {
    try {
      const line = readTextBounded(file, { maxBytes: MAX_NOTE_BYTES, what: 'checkpoint note' }).split('\n', 2)[1];
      if (line !== undefined && /^[0-9]{1,15}$/.test(line)) sizes.add(Number(line));
    } catch {
      // Judged (and reported) by checkNoteCheckpoints.
    }
  }
  return sizes;
}

/**
 * Checkpoint notes checked against the chain's tree: signed by one of `keys` (under the note's own key name), of
 * this ledger's origin, of a size the chain reaches, with the root the chain's tree has at that size (recomputed
 * from the chain, so a damaged tile does not hide or fake a rewrite). Added to `report` as the JSON checkpoints'
 * findings are.
 */
export function checkNoteCheckpoints(
  tree: ChainRoots,
  files: readonly string[],
  keys: readonly CheckpointKey[],
  report: RootCheckpointReport,
): RootCheckpointReport {
  for (const source of files) {
    const finding = checkNote(source, keys, tree);
    report.checked += 1;
    if (finding === null) report.verified += 1;
    else {
      report.findings.push(finding);
      report.ok = false;
    }
  }
  return { ...report, absent: report.absent && files.length === 0 };
}

function checkNote(source: string, keys: readonly CheckpointKey[], tree: ChainRoots): CheckpointFinding | null {
  let note: string;
  try {
    note = readTextBounded(source, {
      maxBytes: MAX_NOTE_BYTES,
      what: 'checkpoint note',
      unreadableCode: 'ERR_CHECKPOINT_INVALID',
    });
  } catch (error) {
    if (!isCpError(error)) throw error;
    return { problem: 'invalid', source, seq: null, message: `${source}: ${error.message}` };
  }
  const judged = judgeNote(source, note, keys, tree);
  return 'finding' in judged ? judged.finding : null;
}

/**
 * A note's text judged against the chain's tree: its finding, or its head with the text it signs and the other
 * signatures it carries (a witness's cosignatures, for the caller to judge).
 */
export function judgeNote(
  source: string,
  note: string,
  keys: readonly CheckpointKey[],
  tree: ChainRoots,
): { finding: CheckpointFinding } | { head: TreeHead; text: string; others: NoteSignature[] } {
  const found = (
    problem: CheckpointFinding['problem'],
    message: string,
    seq: number | null = null,
  ): { finding: CheckpointFinding } => ({ finding: { problem, source, seq, message: `${source}: ${message}` } });
  let origin: string;
  try {
    origin = splitNote(note).text.split('\n', 1)[0] ?? '';
  } catch (error) {
    if (!isCpError(error)) throw error;
    return found('invalid', error.message);
  }
  let opened: { text: string; others: NoteSignature[] } | undefined;
  let lastError = 'no checkpoint key of this root signed it';
  for (const key of keys) {
    try {
      opened = openNote(note, noteVerifier(origin, key.public_key));
      break;
    } catch (error) {
      if (!isCpError(error)) throw error;
      if (!/not signed by/.test(error.message)) lastError = error.message;
    }
  }
  if (opened === undefined)
    return found(/does not verify/.test(lastError) ? 'bad_signature' : 'untrusted_key', lastError);
  let head: TreeHead;
  try {
    head = parseCheckpointBody(opened.text);
  } catch (error) {
    if (!isCpError(error)) throw error;
    return found('invalid', error.message);
  }
  if (head.origin !== ledgerOrigin(tree.ledgerId))
    return found(
      'other_ledger',
      `the note is of ${head.origin}, not of this ledger (${ledgerOrigin(tree.ledgerId)})`,
      head.size,
    );
  if (head.size > tree.size)
    return found(
      'truncated',
      `the note signs a tree of ${head.size} entries; the ledger ends at #${tree.size}: entries were removed from the tail`,
      head.size,
    );
  if (!tree.rootAt(head.size)?.equals(head.root))
    return found(
      'mismatch',
      `the ledger's tree of ${head.size} entries does not have the root the note signs: the chain was rewritten up to it`,
      head.size,
    );
  // The chain holds the signed tree; proofs are read from the tiles, which must give it too.
  if (tree.tilesDamagedFrom <= head.size)
    return found(
      'mismatch',
      `the ledger's stored Merkle tiles do not give the root the note signs at ${head.size} entries (the chain's own tree does): the tiles were damaged, see the tree's findings`,
      head.size,
    );
  return { head, ...opened };
}
