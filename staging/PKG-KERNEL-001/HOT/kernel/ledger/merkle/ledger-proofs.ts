import { createPublicKey } from 'node:crypto';
import { CpError, show } from '../../errors.js';
import type { RootKey } from '../../signing/root-key.js';
import type { Ledger } from '../ledger.js';
import type { EntryRow } from '../rows.js';
import {
  formatCheckpointBody,
  type NoteSigner,
  noteVerifier,
  openNote,
  parseCheckpointBody,
  signNote,
  type TreeHead,
} from './note.js';
import { consistencyPath, inclusionPath } from './proof.js';
import { rangeHashOf } from './tiles.js';
import { type LedgerTree, treeRoot, withLedgerTree } from './tree-view.js';

export { type LedgerTree, treeRoot, withLedgerTree } from './tree-view.js';

/** The checkpoint origin (and note key name) of a ledger: its identity, entry #1's hash. */
export function ledgerOrigin(ledgerId: string): string {
  return `cplane.ledger/${ledgerId.slice(0, 32)}`;
}

/** The root key as a note signer for a ledger's checkpoints. */
export function rootNoteSigner(key: RootKey, origin: string): NoteSigner {
  return { ...noteVerifier(origin, createPublicKey(key.private_key)), privateKey: key.private_key };
}

/** The tree head of `size` signed as a C2SP checkpoint note. */
export function checkpointNote(tree: LedgerTree, size: number, signer: NoteSigner): string {
  const head: TreeHead = { origin: ledgerOrigin(tree.ledgerId), size, root: treeRoot(tree, size) };
  return signNote(formatCheckpointBody(head), signer);
}

export const INCLUSION_KIND = 'cplane-inclusion-proof';
export const CONSISTENCY_KIND = 'cplane-consistency-proof';

/** The entry as stored: the columns its entry_hash covers (metadata as its canonical JSON text). */
export interface ProofEntry {
  id: string;
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: string;
  timestamp: string;
  previous_hash: string;
  entry_hash: string;
}

export interface InclusionProofFile {
  kind: typeof INCLUSION_KIND;
  version: 1;
  entry: ProofEntry;
  leaf_index: number;
  tree_size: number;
  /** base64 hashes, leaf to root (RFC 9162 §2.1.3.1 PATH). */
  audit_path: string[];
  /** The C2SP checkpoint note of the tree of tree_size. */
  checkpoint: string;
}

export interface ConsistencyProofFile {
  kind: typeof CONSISTENCY_KIND;
  version: 1;
  old_size: number;
  new_size: number;
  /** base64 hashes (RFC 9162 §2.1.4.1 PROOF). */
  consistency_path: string[];
  old_checkpoint: string;
  new_checkpoint: string;
}

const unknown = (message: string, details: Record<string, unknown>): CpError =>
  new CpError('ERR_PROOF_ENTRY_UNKNOWN', message, {
    hint: 'pass an entry id from `cplane ledger query`, and sizes no larger than the head (`cplane ledger head`)',
    details,
  });

function storedEntry(row: EntryRow): ProofEntry {
  const { id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash } = row;
  return { id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash };
}

/** The size a checkpoint note given to `prove` signs, once its signature verified with the root key. */
export function noteSize(note: string, signer: NoteSigner, tree: LedgerTree): number {
  const head = parseCheckpointBody(openNote(note, signer).text);
  if (head.origin !== ledgerOrigin(tree.ledgerId))
    throw unknown(`the checkpoint is of ${show(head.origin)}, not this ledger (${ledgerOrigin(tree.ledgerId)})`, {
      origin: head.origin,
    });
  if (head.size > tree.size)
    throw unknown(`the checkpoint signs ${head.size} entries; the ledger has ${tree.size}`, { size: head.size });
  if (!treeRoot(tree, head.size).equals(head.root))
    throw new CpError(
      'ERR_LEDGER_TREE_DAMAGED',
      `the ledger's tree of ${head.size} entries does not have the root the checkpoint signs: the ledger was rewritten`,
      {
        hint: 'run `cplane ledger verify`; restore the ledger from a copy',
        details: { size: head.size },
      },
    );
  return head.size;
}

/** An inclusion proof of entry `id` in the tree of the checkpoint `note` (a fresh one of the head when none). */
export function proveInclusion(
  ledger: Ledger,
  id: string,
  signer: (origin: string) => NoteSigner,
  note?: string,
): InclusionProofFile {
  return withLedgerTree(ledger, (tree) => {
    const seq = ledger.db.prepare('SELECT seq FROM entries WHERE id = ?').pluck().get(id) as number | undefined;
    const [row] = seq === undefined ? [] : ledger.rows(seq, 1);
    return inclusionProof(tree, id, row, signer, note);
  });
}

/** The inclusion proof of the stored entry `row` (undefined: no entry `id`) in one snapshot of a ledger's tree. */
export function inclusionProof(
  tree: LedgerTree,
  id: string,
  row: EntryRow | undefined,
  signer: (origin: string) => NoteSigner,
  note?: string,
): InclusionProofFile {
  if (row === undefined) throw unknown(`no entry ${show(id)} in the ledger`, { id });
  const seq = row.seq;
  const sign = signer(ledgerOrigin(tree.ledgerId));
  const size = note === undefined ? tree.size : noteSize(note, sign, tree);
  if (seq > size) throw unknown(`entry ${id} (#${seq}) came after the checkpoint's ${size} entries`, { id, seq, size });
  const path = inclusionPath(seq - 1, size, rangeHashOf(tree.source, size));
  return {
    kind: INCLUSION_KIND,
    version: 1,
    entry: storedEntry(row),
    leaf_index: seq - 1,
    tree_size: size,
    audit_path: path.map((h) => h.toString('base64')),
    checkpoint: note ?? checkpointNote(tree, size, sign),
  };
}

/** A tree size, or a checkpoint note naming one (its signature and root checked against the ledger's tree). */
export type TreeRef = number | { note: string };

/** A consistency proof between two trees of the ledger (`to` defaults to the head), each with its signed checkpoint. */
export function proveConsistency(
  ledger: Ledger,
  from: TreeRef,
  to: TreeRef | undefined,
  signer: (origin: string) => NoteSigner,
): ConsistencyProofFile {
  return withLedgerTree(ledger, (tree) => consistencyProof(tree, from, to, signer));
}

/** proveConsistency on one snapshot of a ledger's tree. */
export function consistencyProof(
  tree: LedgerTree,
  from: TreeRef,
  to: TreeRef | undefined,
  signer: (origin: string) => NoteSigner,
): ConsistencyProofFile {
  const sign = signer(ledgerOrigin(tree.ledgerId));
  const sizeOf = (ref: TreeRef): number => (typeof ref === 'number' ? ref : noteSize(ref.note, sign, tree));
  const noteOf = (ref: TreeRef, size: number): string =>
    typeof ref === 'number' ? checkpointNote(tree, size, sign) : ref.note;
  const oldSize = sizeOf(from);
  const size = to === undefined ? tree.size : sizeOf(to);
  if (!(oldSize >= 1 && oldSize <= size && size <= tree.size))
    throw unknown(`cannot prove ${oldSize} → ${size} entries on a ledger of ${tree.size}`, {
      oldSize,
      newSize: size,
    });
  return {
    kind: CONSISTENCY_KIND,
    version: 1,
    old_size: oldSize,
    new_size: size,
    consistency_path: consistencyPath(oldSize, size, rangeHashOf(tree.source, size)).map((h) => h.toString('base64')),
    old_checkpoint: noteOf(from, oldSize),
    new_checkpoint: to === undefined ? checkpointNote(tree, size, sign) : noteOf(to, size),
  };
}
