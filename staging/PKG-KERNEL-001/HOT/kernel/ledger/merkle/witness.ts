import { createHash, generateKeyPairSync, createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../atomic.js';
import { readTextBounded } from '../../bounded-read.js';
import { CpError, isCpError } from '../../errors.js';
import {
  MAX_NOTE_BYTES,
  type NoteVerifier,
  ed25519Raw,
  openNote,
  parseCheckpointBody,
  splitNote,
  type TreeHead,
  verifierFromText,
} from './note.js';
import { MAX_PROOF_BYTES, verifyProofText } from './verify-proof.js';

/**
 * A witness (c2sp.org/tlog-witness, in files): it remembers the newest checkpoint of a log it accepted and
 * cosigns a newer one only when a consistency proof joins the two, so a log that rewrote or forked its history
 * cannot get a cosignature for it from anyone running a witness. Cosignatures are C2SP tlog-cosignature v1
 * (Ed25519, signature type 0x04, timestamped).
 */
const COSIGNATURE_TYPE = 0x04;
const STATE_FILE = 'checkpoint';
const KEY_FILE = 'witness-key.pem';

export interface WitnessState {
  dir: string;
  name: string;
  key: KeyObject;
  /** The newest checkpoint accepted, as the log signed it; null before the first. */
  held: { note: string; head: TreeHead } | null;
}

export interface WitnessResult {
  source: string;
  accepted: boolean;
  size: number;
  /** The checkpoint with this witness's cosignature appended. */
  cosigned: string;
}

const refused = (message: string, details: Record<string, unknown>): CpError =>
  new CpError('ERR_WITNESS_REFUSED', message, {
    hint: 'a witness cosigns only a checkpoint that extends the one it holds, proven by `cplane ledger prove --from HELD`; a fork or a rollback means the log was rewritten',
    details,
  });

/** The witness's state directory, its key created (mode 0600) on first use. */
export function openWitness(dir: string, name: string): WitnessState {
  mkdirSync(dir, { recursive: true });
  const keyPath = join(dir, KEY_FILE);
  if (!existsSync(keyPath)) {
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileAtomic(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  }
  const key = createPrivateKey(readFileSync(keyPath, 'utf8'));
  const statePath = join(dir, STATE_FILE);
  const note = existsSync(statePath)
    ? readTextBounded(statePath, { maxBytes: MAX_NOTE_BYTES, what: 'witness state' })
    : null;
  return { dir, name, key, held: note === null ? null : { note, head: parseCheckpointBody(splitNote(note).text) } };
}

/** The witness's public key as a vkey (signature type 0x04), for clients that check its cosignatures. */
export function witnessVkey(state: WitnessState): string {
  const raw = ed25519Raw(createPublicKey(state.key));
  return `${state.name}+${cosignerKeyId(state.name, raw).toString('hex')}+${Buffer.concat([Buffer.from([COSIGNATURE_TYPE]), raw]).toString('base64')}`;
}

function cosignerKeyId(name: string, raw: Uint8Array): Buffer {
  return createHash('sha256')
    .update(name)
    .update(Buffer.from([0x0a, COSIGNATURE_TYPE]))
    .update(raw)
    .digest()
    .subarray(0, 4);
}

/** `note` with a tlog-cosignature v1 line of this witness appended (timestamp in seconds). */
export function cosign(state: WitnessState, note: string, nowMs: number): string {
  const { text } = splitNote(note);
  const time = Math.floor(nowMs / 1000);
  const signature = sign(null, Buffer.from(`cosignature/v1\ntime ${time}\n${text}`, 'utf8'), state.key);
  const timestamp = Buffer.alloc(8);
  timestamp.writeBigUInt64BE(BigInt(time));
  const raw = ed25519Raw(createPublicKey(state.key));
  const line = `\u2014 ${state.name} ${Buffer.concat([cosignerKeyId(state.name, raw), timestamp, signature]).toString('base64')}\n`;
  return `${note}${line}`;
}

/** The log's key as given (a vkey, or a PEM key named by the note's origin). */
function logVerifier(keyText: string, note: string): NoteVerifier {
  return verifierFromText(keyText, splitNote(note).text.split('\n', 1)[0] ?? '');
}

/**
 * One input: a checkpoint note (accepted only as the first the witness sees, or as the one it holds) or a
 * consistency proof from the held checkpoint to a newer one. Accepting moves the held checkpoint forward.
 */
export function witness(state: WitnessState, source: string, keyText: string, nowMs: number): WitnessResult {
  const text = readTextBounded(source, {
    maxBytes: MAX_PROOF_BYTES,
    what: 'checkpoint or proof',
    unreadableCode: 'ERR_WITNESS_REFUSED',
  });
  let note: string;
  let oldHead: TreeHead | null = null;
  try {
    if (text.trimStart().startsWith('{')) {
      const proof = JSON.parse(text) as { old_checkpoint?: string; new_checkpoint?: string };
      verifyProofText(text, keyText);
      note = proof.new_checkpoint as string;
      oldHead = parseCheckpointBody(splitNote(proof.old_checkpoint as string).text);
    } else {
      note = text;
    }
    openNote(note, logVerifier(keyText, note));
  } catch (error) {
    if (isCpError(error) && error.code !== 'ERR_WITNESS_REFUSED')
      throw refused(`${source}: ${error.message}`, { source, cause: error.code });
    if (error instanceof SyntaxError) throw refused(`${source} is neither a checkpoint note nor a proof`, { source });
    throw error;
  }
  const head = parseCheckpointBody(splitNote(note).text);
  const held = state.held;
  if (held !== null) {
    if (head.origin !== held.head.origin)
      throw refused(`${source} is of ${head.origin}; this witness holds ${held.head.origin}`, { source });
    if (head.size < held.head.size)
      throw refused(`${source} signs ${head.size} entries; the witness holds ${held.head.size}: a rollback`, {
        source,
        size: head.size,
        held: held.head.size,
      });
    if (head.size === held.head.size) {
      if (!head.root.equals(held.head.root))
        throw refused(`${source} signs another tree of ${head.size} entries than the one the witness holds: a fork`, {
          source,
          size: head.size,
        });
    } else if (oldHead === null) {
      throw refused(
        `${source} signs ${head.size} entries; the witness holds ${held.head.size}: pass a consistency proof from it (cplane ledger prove --from ${held.head.size})`,
        { source, size: head.size, held: held.head.size },
      );
    } else if (oldHead.size !== held.head.size || !oldHead.root.equals(held.head.root)) {
      throw refused(
        oldHead.size === held.head.size
          ? `${source} proves growth from another tree of ${held.head.size} entries than the one the witness holds: a fork`
          : `${source} proves growth from ${oldHead.size} entries; the witness holds ${held.head.size}`,
        { source, from: oldHead.size, held: held.head.size },
      );
    }
  }
  const accepted = held === null || head.size > held.head.size;
  if (accepted) {
    writeFileAtomic(join(state.dir, STATE_FILE), note);
    state.held = { note, head };
  }
  const cosigned = cosign(state, note, nowMs);
  writeFileAtomic(join(state.dir, 'cosigned'), cosigned);
  return { source, accepted, size: head.size, cosigned };
}
