import { readTextBounded } from '../../bounded-read.js';
import { isCpError } from '../../errors.js';
import type { CheckpointFinding, CheckpointKey } from '../checkpoint.js';
import type { RootCheckpointReport } from '../checkpoint-check.js';
import type { Ledger } from '../ledger.js';
import { ledgerOrigin } from './ledger-proofs.js';
import { MAX_NOTE_BYTES, noteVerifier, openNote, parseCheckpointBody, splitNote } from './note.js';
import { type LedgerTree, treeRoot, withLedgerTree } from './tree-view.js';

/** Whether a checkpoint file holds a C2SP signed note (its first line an origin) rather than cplane's JSON. */
export function isNoteFile(path: string): boolean {
  try {
    const text = readTextBounded(path, { maxBytes: MAX_NOTE_BYTES, what: 'checkpoint' });
    return !text.trimStart().startsWith('{');
  } catch {
    return false;
  }
}

/**
 * Checkpoint notes checked against the ledger's tree: signed by one of `keys` (under the note's own key name), of
 * this ledger's origin, of a size the chain reaches, with the root its tree has at that size. Added to `report`
 * as the JSON checkpoints' findings are.
 */
export function checkNoteCheckpoints(
  ledger: Ledger,
  files: readonly string[],
  keys: readonly CheckpointKey[],
  report: RootCheckpointReport,
): RootCheckpointReport {
  withLedgerTree(ledger, (tree) => {
    for (const source of files) {
      const finding = checkNote(source, keys, tree);
      report.checked += 1;
      if (finding === null) report.verified += 1;
      else {
        report.findings.push(finding);
        report.ok = false;
      }
    }
  });
  return { ...report, absent: report.absent && files.length === 0 };
}

function checkNote(source: string, keys: readonly CheckpointKey[], tree: LedgerTree): CheckpointFinding | null {
  const found = (
    problem: CheckpointFinding['problem'],
    message: string,
    seq: number | null = null,
  ): CheckpointFinding => ({
    problem,
    source,
    seq,
    message: `${source}: ${message}`,
  });
  let note: string;
  let origin: string;
  try {
    note = readTextBounded(source, {
      maxBytes: MAX_NOTE_BYTES,
      what: 'checkpoint note',
      unreadableCode: 'ERR_CHECKPOINT_INVALID',
    });
    origin = splitNote(note).text.split('\n', 1)[0] ?? '';
  } catch (error) {
    if (!isCpError(error)) throw error;
    return found('invalid', error.message);
  }
  let opened: string | undefined;
  let lastError = 'no checkpoint key of this root signed it';
  for (const key of keys) {
    try {
      opened = openNote(note, noteVerifier(origin, key.public_key)).text;
      break;
    } catch (error) {
      if (!isCpError(error)) throw error;
      if (!/not signed by/.test(error.message)) lastError = error.message;
    }
  }
  if (opened === undefined)
    return found(/does not verify/.test(lastError) ? 'bad_signature' : 'untrusted_key', lastError);
  let head: ReturnType<typeof parseCheckpointBody>;
  try {
    head = parseCheckpointBody(opened);
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
  if (!treeRoot(tree, head.size).equals(head.root))
    return found(
      'mismatch',
      `the ledger's tree of ${head.size} entries does not have the root the note signs: the chain was rewritten up to it`,
      head.size,
    );
  return null;
}
