import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readTextBounded } from '../../bounded-read.js';
import { defaultConfigPath, effectiveConfig } from '../../config/effective.js';
import { isCpError } from '../../errors.js';
import { rootPaths } from '../../root/layout.js';
import type { CheckpointKey } from '../checkpoint.js';
import { type ChainRoots, judgeNote } from './note-checkpoints.js';
import { MAX_NOTE_BYTES, type NoteSignature, splitNote, type TreeHead } from './note.js';
import { type Cosigner, cosignatureHolds, parseCosignerVkey } from './witness-http.js';

/** Where the gateway keeps the checkpoints its witnesses cosigned: beside the root's checkpoints. */
export function cosignedDir(root: string): string {
  return join(dirname(rootPaths(root).checkpoints), 'cosigned');
}

const FILE = /^[0-9]{16}\.cosigned$/;
/** A bound on the findings kept: a directory rewritten wholesale is named by its first files. */
const MAX_FINDINGS = 100;

export type CosignedProblem =
  | 'invalid'
  | 'untrusted_key'
  | 'bad_signature'
  | 'other_ledger'
  | 'truncated'
  | 'rewritten'
  | 'tiles_damaged'
  | 'misnamed'
  | 'bad_cosignature'
  | 'unknown_witness'
  | 'config'
  | 'unjudged';

/** One cosigned file, or one cosignature in it, that does not hold (or is not trusted). */
export interface CosignedFinding {
  code: 'ERR_COSIGNED_INVALID';
  file: string;
  /** The tree size the file names (its checkpoint's, else its file name's); null when neither can be read. */
  size: number | null;
  /** The witness a cosignature line names; null for a fault of the file or of its checkpoint. */
  witness: string | null;
  problem: CosignedProblem;
  message: string;
  hint: string;
}

export interface CosignedCheck {
  /** false when a file or a configured witness's cosignature does not hold; unknown witnesses do not count. */
  ok: boolean;
  files: number;
  /** Files whose checkpoint the root key signed and whose tree the chain holds. */
  verified: number;
  /** Cosignatures verified with a configured witness's vkey, by witness name. */
  cosignatures: Record<string, number>;
  /** The largest tree size a configured witness cosigned (null: none). */
  newest: number | null;
  problems: CosignedFinding[];
  /** Cosignatures by keys not in gateway.checkpoint.witnesses: reported, never trusted. */
  untrusted: CosignedFinding[];
}

const HINTS: Record<CosignedProblem, string> = {
  invalid:
    'the gateway writes these files whole (a checkpoint note and cosignature lines); restore it from a backup, or ask the witnesses for the checkpoint they hold',
  untrusted_key:
    "the checkpoint is not signed by this root's checkpoint key: the file was replaced; compare it with the witnesses' state",
  bad_signature:
    'the checkpoint text was altered after the root key signed it: restore the file from a backup, and suspect whoever could write it',
  other_ledger: 'the file belongs to another ledger: move it to that root',
  truncated:
    'witnesses cosigned a longer tree than the ledger holds: entries were removed from the tail; restore the ledger from a copy',
  rewritten:
    'witnesses cosigned the tree this file signs and the ledger no longer holds it: the history was rewritten after they cosigned; restore the ledger from a copy and ask the witnesses for the checkpoint they hold',
  tiles_damaged: "the chain holds the cosigned tree but the Merkle tiles do not: see the tree's findings",
  misnamed: 'the file name must be the checkpoint tree size in 16 digits: the file was renamed or replaced',
  bad_cosignature:
    "the cosignature line does not verify with the witness's vkey in gateway.checkpoint.witnesses: the line was altered, or the vkey configured is not the witness's key",
  unknown_witness:
    'not trusted: no witness in gateway.checkpoint.witnesses has this key; add its vkey there if it is a witness you rely on',
  unjudged: "the chain's tree could not be recomputed (see the tree's findings): repair the ledger, then verify again",
  config:
    'fix the gateway config (`cplane config show gateway`); witness keys are read from gateway.checkpoint.witnesses',
};

/** The witness keys the root's gateway config names (`gateway.checkpoint.witnesses[].vkey`), read generically. */
export function configuredCosigners(root: string): { cosigners: Cosigner[]; problems: string[] } {
  if (!existsSync(defaultConfigPath(root, 'gateway'))) return { cosigners: [], problems: [] };
  let listed: unknown;
  try {
    const section = effectiveConfig(root, 'gateway') as { checkpoint?: { witnesses?: unknown } } | null;
    listed = section?.checkpoint?.witnesses;
  } catch (error) {
    if (!isCpError(error)) throw error;
    return { cosigners: [], problems: [`the gateway config cannot be read: ${error.message}`] };
  }
  if (listed === undefined) return { cosigners: [], problems: [] };
  if (!Array.isArray(listed)) return { cosigners: [], problems: ['gateway.checkpoint.witnesses is not a list'] };
  const cosigners: Cosigner[] = [];
  const problems: string[] = [];
  listed.forEach((w: { vkey?: unknown }, i) => {
    const parsed = typeof w?.vkey === 'string' ? parseCosignerVkey(w.vkey) : null;
    if (parsed === null) problems.push(`gateway.checkpoint.witnesses[${i}].vkey is not a tlog-cosignature vkey`);
    else cosigners.push(parsed);
  });
  return { cosigners, problems };
}

/** The cosigned files of a root (sorted by size), for their sizes to be kept while the chain's tree is recomputed. */
export function cosignedFiles(root: string): string[] {
  const dir = cosignedDir(root);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.cosigned'))
    .sort()
    .map((n) => join(dir, n));
}

/**
 * Each cosigned file judged against the chain's tree: its checkpoint signed by one of the root's `keys` and of the
 * root the chain's tree has at its size (recomputed from the chain, so a rewrite after the witnesses cosigned is
 * named), then each cosignature against the configured witnesses' keys. A damaged file is a finding, never a crash.
 */
export function checkCosigned(
  tree: ChainRoots,
  files: readonly string[],
  keys: readonly CheckpointKey[],
  witnesses: { cosigners: readonly Cosigner[]; problems: readonly string[] },
): CosignedCheck {
  const check: CosignedCheck = {
    ok: true,
    files: files.length,
    verified: 0,
    cosignatures: {},
    newest: null,
    problems: [],
    untrusted: [],
  };
  const add = (list: CosignedFinding[], finding: Omit<CosignedFinding, 'code' | 'hint'>): void => {
    if (list.length < MAX_FINDINGS)
      list.push({ code: 'ERR_COSIGNED_INVALID', ...finding, hint: HINTS[finding.problem] });
  };
  for (const problem of witnesses.problems)
    add(check.problems, { file: '', size: null, witness: null, problem: 'config', message: problem });
  for (const file of files) {
    // A chain whose tree could not be recomputed has no root to judge a file by: say so rather than guess.
    if (tree.ledgerId === '') {
      const message = `${file}: not judged: the chain's tree could not be recomputed`;
      add(check.problems, { file, size: null, witness: null, problem: 'unjudged', message });
    } else checkFile(file, tree, keys, witnesses.cosigners, check, add);
  }
  check.ok = check.problems.length === 0;
  return check;
}

type Add = (list: CosignedFinding[], finding: Omit<CosignedFinding, 'code' | 'hint'>) => void;

type Fault = { problem: CosignedProblem; message: string; size: number | null };

/** A cosigned file's checkpoint judged against the chain's tree: its fault, or its head, text and cosignatures. */
function judgeFile(
  file: string,
  named: number | null,
  tree: ChainRoots,
  keys: readonly CheckpointKey[],
): { fault: Fault } | { head: TreeHead; text: string; others: NoteSignature[] } {
  const fault = (problem: CosignedProblem, message: string, size: number | null = named) => ({
    fault: { problem, size, message: `${file}: ${message}` },
  });
  let note: string;
  try {
    note = readTextBounded(file, { maxBytes: MAX_NOTE_BYTES, what: 'cosigned checkpoint' });
  } catch (error) {
    if (!isCpError(error)) throw error;
    return fault('invalid', error.message);
  }
  const judged = judgeNote(file, note, keys, tree);
  if ('finding' in judged) {
    const { problem, seq, message } = judged.finding;
    const body = message.slice(file.length + 2);
    if (problem !== 'mismatch') return fault(problem as CosignedProblem, body, seq ?? named);
    if (/tiles/.test(body)) return fault('tiles_damaged', body, seq);
    return fault('rewritten', `${body}, after ${cosignerNames(note)} cosigned it`, seq);
  }
  if (named !== judged.head.size)
    return fault(
      'misnamed',
      `the file is named for ${named ?? 'no'} size but holds a checkpoint of ${judged.head.size}`,
    );
  return judged;
}

function checkFile(
  file: string,
  tree: ChainRoots,
  keys: readonly CheckpointKey[],
  cosigners: readonly Cosigner[],
  check: CosignedCheck,
  add: Add,
): void {
  const name = file.slice(file.lastIndexOf('/') + 1);
  const named = FILE.test(name) ? Number(name.slice(0, 16)) : null;
  const judged = judgeFile(file, named, tree, keys);
  if ('fault' in judged) {
    add(check.problems, { file, witness: null, ...judged.fault });
    return;
  }
  const { head, text, others } = judged;
  check.verified += 1;
  for (const signature of others) {
    const known = cosigners.find((c) => c.name === signature.name && c.keyId.equals(signature.keyId));
    const at = { file, size: head.size, witness: signature.name };
    if (known === undefined) {
      add(check.untrusted, {
        ...at,
        problem: 'unknown_witness',
        message: `${file}: a cosignature by ${signature.name} (key ${signature.keyId.toString('hex')}) of the tree of ${head.size}: no configured witness has this key`,
      });
    } else if (!cosignatureHolds(known, text, signature.signature)) {
      add(check.problems, {
        ...at,
        problem: 'bad_cosignature',
        message: `${file}: the cosignature of witness ${signature.name} on the tree of ${head.size} does not verify with its configured vkey`,
      });
    } else {
      check.cosignatures[known.name] = (check.cosignatures[known.name] ?? 0) + 1;
      check.newest = Math.max(check.newest ?? 0, head.size);
    }
  }
}

/** The names on a note's signature lines after the first (unverified: for a message only). */
function cosignerNames(note: string): string {
  try {
    const names = splitNote(note)
      .signatures.slice(1)
      .map((s) => s.name);
    return names.length === 0 ? 'no witness' : `witness${names.length > 1 ? 'es' : ''} ${names.join(', ')}`;
  } catch {
    return 'its witnesses';
  }
}

/** The report's lines: each finding, then a summary. */
export function cosignedLines(check: CosignedCheck): string[] {
  if (check.files === 0 && check.problems.length === 0) return [];
  const lines = [
    ...check.problems.slice(0, 20).map((f) => `cosigned ${f.problem.toUpperCase()}: ${f.message}`),
    ...check.untrusted.slice(0, 20).map((f) => `cosigned UNKNOWN_WITNESS (not trusted): ${f.message}`),
  ];
  const counted = Object.entries(check.cosignatures)
    .map(([w, n]) => `${w} ${n}`)
    .join(', ');
  lines.push(
    `cosigned: ${check.verified} of ${check.files} checkpoints verified${counted ? `; cosignatures: ${counted}` : '; no cosignature by a configured witness'}${check.newest === null ? '' : `; witnessed up to #${check.newest}`}`,
  );
  return lines;
}
