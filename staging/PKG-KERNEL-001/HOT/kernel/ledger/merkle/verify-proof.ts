import { sha256Hex } from '../../canonical.js';
import { hashInputFromColumns } from '../entry.js';
import { entryLeaf, HASH_SIZE } from './hash.js';
import {
  CONSISTENCY_KIND,
  type ConsistencyProofFile,
  INCLUSION_KIND,
  type InclusionProofFile,
  type ProofEntry,
} from './ledger-proofs.js';
import {
  type NoteVerifier,
  openNote,
  parseCheckpointBody,
  proofInvalid,
  splitNote,
  type TreeHead,
  verifierFromText,
} from './note.js';
import { type ProofProblem, verifyConsistency, verifyInclusion } from './proof.js';

/** What a proof that holds proves. */
export type ProofResult =
  | {
      kind: 'inclusion';
      entry_id: string;
      entry_hash: string;
      leaf_index: number;
      tree_size: number;
      origin: string;
      root: string;
    }
  | { kind: 'consistency'; old_size: number; new_size: number; origin: string; old_root: string; new_root: string };

/** The largest proof file read: a few kilobytes of hashes and notes, and one entry's stored columns. */
export const MAX_PROOF_BYTES = 16 * 1024 * 1024;
const MAX_PATH = 64;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function field<T>(obj: Record<string, unknown>, key: string, check: (v: unknown) => v is T, what: string): T {
  const value = obj[key];
  if (!check(value)) throw proofInvalid(`the proof's ${key} is not ${what}`, { field: key });
  return value;
}
const isString = (v: unknown): v is string => typeof v === 'string';
const isSize = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function hashes(obj: Record<string, unknown>, key: string): Buffer[] {
  const list = obj[key];
  if (!Array.isArray(list) || list.length > MAX_PATH)
    throw proofInvalid(`the proof's ${key} is not a list of at most ${MAX_PATH} hashes`, { field: key });
  return list.map((h, i) => {
    const bytes = typeof h === 'string' && /^[A-Za-z0-9+/]{43}=$/.test(h) ? Buffer.from(h, 'base64') : null;
    if (bytes === null || bytes.length !== HASH_SIZE)
      throw proofInvalid(`${key}[${i}] is not a base64 SHA-256 hash`, { field: key, index: i });
    return bytes;
  });
}

/** The note's tree head once signed by the key; with a PEM key the note names itself (its origin). */
function signedHead(note: string, key: string | NoteVerifier): TreeHead {
  let verifier: NoteVerifier;
  if (typeof key === 'string') {
    const origin = splitNote(note).text.split('\n', 1)[0] ?? '';
    verifier = verifierFromText(key, origin);
  } else verifier = key;
  return parseCheckpointBody(openNote(note, verifier).text);
}

function fail(problem: ProofProblem, what: string): never {
  throw proofInvalid(`${what}: ${problem.message}`, { problem: problem.problem });
}

function entryOf(value: unknown): ProofEntry {
  if (!isObject(value)) throw proofInvalid("the proof's entry is not an object", { field: 'entry' });
  const keys = [
    'id',
    'event_type',
    'submission_id',
    'decision',
    'reason',
    'metadata',
    'timestamp',
    'previous_hash',
    'entry_hash',
  ];
  for (const key of keys) field(value, key, isString, 'text');
  return value as unknown as ProofEntry;
}

/** Checks a proof file's text with a key (vkey text or PEM), offline: RFC 9162 §2.1.3.2 / §2.1.4.2 and the notes' signatures. */
export function verifyProofText(text: string, key: string | NoteVerifier): ProofResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw proofInvalid(`the proof is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw proofInvalid('the proof is not a JSON object');
  if (value.version !== 1) throw proofInvalid(`proof version ${JSON.stringify(value.version)} is not 1`);
  if (value.kind === INCLUSION_KIND)
    return verifyInclusionFile(value as Partial<InclusionProofFile> & Record<string, unknown>, key);
  if (value.kind === CONSISTENCY_KIND)
    return verifyConsistencyFile(value as Partial<ConsistencyProofFile> & Record<string, unknown>, key);
  throw proofInvalid(`proof kind ${JSON.stringify(value.kind)} is not ${INCLUSION_KIND} or ${CONSISTENCY_KIND}`);
}

function verifyInclusionFile(file: Record<string, unknown>, key: string | NoteVerifier): ProofResult {
  const entry = entryOf(file.entry);
  const index = field(file, 'leaf_index', isSize, 'a leaf index');
  const size = field(file, 'tree_size', isSize, 'a tree size');
  const path = hashes(file, 'audit_path');
  const head = signedHead(field(file, 'checkpoint', isString, 'a signed note'), key);
  if (head.size !== size)
    throw proofInvalid(`the proof is for a tree of ${size} entries but its checkpoint signs ${head.size}`, {
      problem: 'bad_size',
    });
  // The entry's own hash, recomputed: an edited entry fails here, whatever its stated entry_hash.
  if (sha256Hex(hashInputFromColumns(entry)) !== entry.entry_hash)
    throw proofInvalid(`entry ${entry.id} does not hash to its entry_hash: the entry was edited`, {
      problem: 'entry_edited',
    });
  const problem = verifyInclusion(index, size, entryLeaf(entry.entry_hash), path, head.root);
  if (problem) fail(problem, `entry ${entry.id} is not proven in the tree of ${size}`);
  return {
    kind: 'inclusion',
    entry_id: entry.id,
    entry_hash: entry.entry_hash,
    leaf_index: index,
    tree_size: size,
    origin: head.origin,
    root: head.root.toString('base64'),
  };
}

function verifyConsistencyFile(file: Record<string, unknown>, key: string | NoteVerifier): ProofResult {
  const oldSize = field(file, 'old_size', isSize, 'a tree size');
  const newSize = field(file, 'new_size', isSize, 'a tree size');
  const path = hashes(file, 'consistency_path');
  const older = signedHead(field(file, 'old_checkpoint', isString, 'a signed note'), key);
  const newer = signedHead(field(file, 'new_checkpoint', isString, 'a signed note'), key);
  if (older.origin !== newer.origin)
    throw proofInvalid(`the checkpoints are of two logs (${older.origin}, ${newer.origin})`, { problem: 'other_log' });
  if (older.size !== oldSize || newer.size !== newSize)
    throw proofInvalid(
      `the proof is for ${oldSize} → ${newSize} but its checkpoints sign ${older.size} → ${newer.size}`,
      { problem: 'bad_size' },
    );
  const problem = verifyConsistency(oldSize, newSize, older.root, newer.root, path);
  if (problem) fail(problem, `the tree of ${newSize} is not proven to extend the tree of ${oldSize}`);
  return {
    kind: 'consistency',
    old_size: oldSize,
    new_size: newSize,
    origin: newer.origin,
    old_root: older.root.toString('base64'),
    new_root: newer.root.toString('base64'),
  };
}
