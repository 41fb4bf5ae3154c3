import { sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../canonical.js';
import { CpError, show } from '../errors.js';
import { validateCheckpointSchema } from '../manifest/compiled-validators.js';
import { schemaCheck } from '../manifest/schema-issues.js';
import { parsePublicKey, keyIdOf } from '../signing/keys.js';
import type { Anchor } from './entry.js';
import type { Ledger } from './ledger.js';

export const CHECKPOINT_KIND = 'cplane-ledger-checkpoint';

/** The chain head signed with the root key (schema: checkpoint-schema.ts). */
export interface Checkpoint {
  kind: typeof CHECKPOINT_KIND;
  version: 1;
  /** entry_hash of entry #1: which ledger this checkpoint belongs to. */
  ledger_id: string;
  seq: number;
  hash: string;
  entry_id: string;
  time: string;
  key_id: string;
  signature: string;
}

/** The head a checkpoint signs, read in one snapshot; null for an empty ledger. */
export interface CheckpointHead {
  ledger_id: string;
  seq: number;
  hash: string;
  entry_id: string;
}

export function checkpointHead(ledger: Ledger): CheckpointHead | null {
  return ledger.snapshot(() => {
    const head = ledger.head();
    if (head.seq === 0) return null;
    const first = ledger.getBySeq(1);
    const last = ledger.getBySeq(head.seq);
    if (!first || !last) return null;
    return { ledger_id: first.entry_hash, seq: head.seq, hash: last.entry_hash, entry_id: last.id };
  });
}

/** The bytes a checkpoint's signature covers: the canonical JSON of every field but the signature. */
function signedBytes(fields: Omit<Checkpoint, 'signature'>): Buffer {
  return Buffer.from(canonicalJson(fields), 'utf8');
}

export function signCheckpoint(
  head: CheckpointHead,
  key: { key_id: string; private_key: KeyObject },
  now: Date,
): Checkpoint {
  const fields: Omit<Checkpoint, 'signature'> = {
    kind: CHECKPOINT_KIND,
    version: 1,
    ledger_id: head.ledger_id,
    seq: head.seq,
    hash: head.hash,
    entry_id: head.entry_id,
    time: now.toISOString(),
    key_id: key.key_id,
  };
  return { ...fields, signature: sign(null, signedBytes(fields), key.private_key).toString('base64') };
}

const checkpointCheck = schemaCheck(validateCheckpointSchema);

/** A checkpoint read from anywhere (a file in the root, a copy kept elsewhere) is hostile until it passes its schema. */
export function parseCheckpoint(value: unknown, source: string): Checkpoint {
  const issues = checkpointCheck(value);
  if (issues.length > 0) {
    throw new CpError(
      'ERR_CHECKPOINT_INVALID',
      `checkpoint ${show(source)} is invalid: ${issues[0]?.pointer || '/'} ${issues[0]?.message ?? ''}`,
      {
        hint: 'a checkpoint is the JSON written by `cplane ledger checkpoint` (schema HOT/schemas/checkpoint.schema.json)',
        details: { source, errors: issues.map(({ pointer, message }) => ({ pointer, message })) },
      },
    );
  }
  return value as Checkpoint;
}

/** A public key a checkpoint may be verified with: a `checkpoint` key of the trust store, or one given by the user. */
export interface CheckpointKey {
  key_id: string;
  public_key: KeyObject;
}

/** Public keys from PEM text (trust-store entries or `--checkpoint-key` files); a key whose id does not match is dropped. */
export function checkpointKeysFromPem(
  keys: ReadonlyArray<{ key_id?: string; public_key_pem: string; source?: string }>,
): CheckpointKey[] {
  return keys
    .map((k) => {
      const publicKey = parsePublicKey(k.public_key_pem, k.source ?? `checkpoint key ${k.key_id ?? ''}`.trim());
      return { key_id: keyIdOf(publicKey), public_key: publicKey, claimed: k.key_id };
    })
    .filter((k) => k.claimed === undefined || k.claimed === k.key_id)
    .map(({ key_id, public_key }) => ({ key_id, public_key }));
}

export type CheckpointProblem =
  | 'invalid'
  | 'untrusted_key'
  | 'bad_signature'
  | 'other_ledger'
  | 'truncated'
  | 'mismatch'
  | 'missing';

export interface CheckpointFinding {
  problem: CheckpointProblem;
  source: string;
  seq: number | null;
  message: string;
}

/** A checkpoint as found: parsed, or the reason it could not be (kept so the report names every bad file). */
export type FoundCheckpoint = { source: string; checkpoint: Checkpoint } | { source: string; error: CpError };

export interface CheckpointReport {
  ok: boolean;
  /** Checkpoints whose signature verified and whose entry matched. */
  verified: number;
  /** The furthest verified checkpoint: every entry up to it is proven. */
  newest: { seq: number; hash: string; time: string; source: string } | null;
  findings: CheckpointFinding[];
}

/**
 * Check the ledger against checkpoints: each must be signed by one of `keys`, belong to this ledger, and name an
 * entry that exists with exactly that hash. With the chain verified end to end, one matching checkpoint proves every
 * entry up to it; a checkpoint past the head means the tail was cut off.
 */
/** What checking checkpoints reads of a chain: its head and the entry at a position (any ledger store). */
export interface ChainView {
  head(): Anchor;
  at(seq: number): { id: string; entry_hash: string } | undefined;
}

export function checkCheckpoints(
  chain: Ledger | ChainView,
  found: readonly FoundCheckpoint[],
  keys: readonly CheckpointKey[],
): CheckpointReport {
  const findings: CheckpointFinding[] = [];
  let verified = 0;
  let newest: CheckpointReport['newest'] = null;
  const inSnapshot = (fn: (view: ChainView) => void): void => {
    if ('snapshot' in chain) {
      const ledger = chain;
      ledger.snapshot(() => fn({ head: () => ledger.head(), at: (seq) => ledger.getBySeq(seq) }));
    } else fn(chain);
  };
  inSnapshot((ledger) => {
    const head = ledger.head();
    const firstHash = head.seq > 0 ? (ledger.at(1)?.entry_hash ?? null) : null;
    for (const item of found) {
      if ('error' in item) {
        findings.push({ problem: 'invalid', source: item.source, seq: null, message: item.error.message });
        continue;
      }
      const { source, checkpoint: cp } = item;
      const finding = checkOne(ledger, cp, keys, head.seq, firstHash);
      if (finding) {
        findings.push({ ...finding, source, seq: cp.seq, message: `${source}: ${finding.message}` });
        continue;
      }
      verified += 1;
      if (!newest || cp.seq > newest.seq) newest = { seq: cp.seq, hash: cp.hash, time: cp.time, source };
    }
  });
  return { ok: findings.length === 0, verified, newest, findings };
}

function checkOne(
  ledger: ChainView,
  cp: Checkpoint,
  keys: readonly CheckpointKey[],
  headSeq: number,
  firstHash: string | null,
): { problem: CheckpointProblem; message: string } | null {
  const key = keys.find((k) => k.key_id === cp.key_id);
  if (!key) {
    return {
      problem: 'untrusted_key',
      message: `checkpoint #${cp.seq} is signed by ${cp.key_id}, which is not a checkpoint key of this root (or the key given)`,
    };
  }
  const { signature, ...fields } = cp;
  let valid = false;
  try {
    valid = verify(null, signedBytes(fields), key.public_key, Buffer.from(signature, 'base64'));
  } catch {
    valid = false;
  }
  if (!valid)
    return {
      problem: 'bad_signature',
      message: `checkpoint #${cp.seq}'s signature does not verify with ${cp.key_id}: the checkpoint was altered`,
    };
  if (firstHash !== null && cp.ledger_id !== firstHash) {
    return {
      problem: 'other_ledger',
      message: `checkpoint #${cp.seq} belongs to a ledger whose entry #1 hashes to ${cp.ledger_id.slice(0, 16)}…, not ${firstHash.slice(0, 16)}…: another ledger, or entry #1 was rewritten`,
    };
  }
  if (cp.seq > headSeq) {
    return {
      problem: 'truncated',
      message: `ledger ends at #${headSeq} but checkpoint #${cp.seq} (${cp.entry_id}, signed ${cp.time}) is beyond it: entries were removed from the tail`,
    };
  }
  const entry = ledger.at(cp.seq);
  if (!entry || entry.entry_hash !== cp.hash || entry.id !== cp.entry_id) {
    return {
      problem: 'mismatch',
      message: `entry #${cp.seq} is ${entry ? `${entry.id} ${entry.entry_hash.slice(0, 16)}…` : 'missing'} but checkpoint signed ${cp.time} says ${cp.entry_id} ${cp.hash.slice(0, 16)}…: the chain was rewritten up to it`,
    };
  }
  return null;
}
