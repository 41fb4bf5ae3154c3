import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { CpError, show } from '../../errors.js';
import { HASH_SIZE } from './hash.js';

/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, and the checkpoint body they carry
 * (c2sp.org/tlog-checkpoint): origin line, tree size, base64 root hash. Text from a file is hostile: every parse
 * bounds and checks it and answers with a coded error naming what is wrong.
 */
const ED25519 = 0x01;
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** A checkpoint note is about 200 bytes; a note with a witness's cosignatures a few hundred more. */
export const MAX_NOTE_BYTES = 16 * 1024;
const MAX_SIGNATURES = 16;

export interface NoteVerifier {
  name: string;
  /** The 4-byte key ID: SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4]. */
  keyId: Buffer;
  publicKey: KeyObject;
}

export interface NoteSigner extends NoteVerifier {
  privateKey: KeyObject;
}

const invalidKey = (message: string, details: Record<string, unknown> = {}): CpError =>
  new CpError('ERR_PROOF_KEY_INVALID', message, {
    hint: "pass the vkey file written by `cplane ledger export-tiles` (name+hash+base64) or the root key's PEM public key",
    details,
  });

export const proofInvalid = (message: string, details: Record<string, unknown> = {}): CpError =>
  new CpError('ERR_PROOF_INVALID', message, {
    hint: 'the proof does not hold; ask the ledger operator for a fresh one, and suspect the log if a fresh one fails too',
    details,
  });

/** The 32 bytes of an Ed25519 public key. */
export function ed25519Raw(publicKey: KeyObject): Buffer {
  if (publicKey.asymmetricKeyType !== 'ed25519')
    throw invalidKey(`the key is ${publicKey.asymmetricKeyType}, not Ed25519`);
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32);
}

export function ed25519FromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** An Ed25519 private key from its 32-byte seed (RFC 8032), as note signer keys carry it. */
export function ed25519FromSeed(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

export function noteKeyId(name: string, raw: Uint8Array): Buffer {
  return createHash('sha256')
    .update(name)
    .update(Buffer.from([0x0a, ED25519]))
    .update(raw)
    .digest()
    .subarray(0, 4);
}

const KEY_NAME = /^[^\s+\u2014]+$/u;

export function noteVerifier(name: string, publicKey: KeyObject): NoteVerifier {
  if (!KEY_NAME.test(name)) throw invalidKey(`key name ${show(name)} is empty or holds a space or a plus`);
  return { name, keyId: noteKeyId(name, ed25519Raw(publicKey)), publicKey };
}

/** The verifier key text: `<name>+<hex key ID>+<base64(0x01 ‖ public key)>`. */
export function formatVkey(v: NoteVerifier): string {
  return `${v.name}+${v.keyId.toString('hex')}+${Buffer.concat([Buffer.from([ED25519]), ed25519Raw(v.publicKey)]).toString('base64')}`;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function strictBase64(text: string): Buffer | null {
  if (!BASE64.test(text) || text.length % 4 !== 0) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/** A verifier key as text (a vkey file's one line); anything else is refused with the reason. */
export function parseVkey(text: string): NoteVerifier {
  const line = text.trim();
  // The base64 key may itself hold '+': the name and hash are the first two fields, the key the rest.
  const first = line.indexOf('+');
  const second = first < 0 ? -1 : line.indexOf('+', first + 1);
  if (second < 0) throw invalidKey(`${show(line.slice(0, 80))} is not name+hash+base64`);
  const [name, hash, key] = [line.slice(0, first), line.slice(first + 1, second), line.slice(second + 1)];
  if (!KEY_NAME.test(name)) throw invalidKey(`vkey name ${show(name)} is empty or holds a space`);
  if (!/^[0-9a-f]{8}$/.test(hash)) throw invalidKey(`vkey hash ${show(hash)} is not 8 lowercase hex digits`);
  const bytes = strictBase64(key);
  if (bytes === null || bytes.length !== 33 || bytes[0] !== ED25519)
    throw invalidKey('the vkey key is not base64 of 0x01 and a 32-byte Ed25519 public key', { name });
  const raw = bytes.subarray(1);
  if (!noteKeyId(name, raw).equals(Buffer.from(hash, 'hex')))
    throw invalidKey(`vkey hash ${hash} is not the hash of its name and key`, { name });
  return { name, keyId: Buffer.from(hash, 'hex'), publicKey: ed25519FromRaw(raw) };
}

/** `text` (ending in a newline) signed: the note with one signature line. */
export function signNote(text: string, signer: NoteSigner): string {
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  return `${text}\n\u2014 ${signer.name} ${Buffer.concat([signer.keyId, signature]).toString('base64')}\n`;
}

export interface NoteSignature {
  name: string;
  keyId: Buffer;
  signature: Buffer;
}

/** A note split into its text and signature lines (not yet verified). */
export function splitNote(note: string): { text: string; signatures: NoteSignature[] } {
  if (Buffer.byteLength(note, 'utf8') > MAX_NOTE_BYTES)
    throw proofInvalid(`the signed note is over ${MAX_NOTE_BYTES} bytes`);
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw proofInvalid('the signed note holds a control character');
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw proofInvalid('the signed note has no blank line before its signatures');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw proofInvalid(`the signed note has over ${MAX_SIGNATURES} signatures`);
  const signatures = lines.map((line) => {
    const match = /^\u2014 (\S+) (\S+)$/u.exec(line);
    const bytes = match ? strictBase64(match[2] as string) : null;
    if (!match || bytes === null || bytes.length < 5)
      throw proofInvalid(`signature line ${show(line.slice(0, 80))} is not "— <name> <base64>"`);
    return { name: match[1] as string, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) };
  });
  return { text, signatures };
}

/**
 * The note's text once a signature by `verifier` verifies (signed-note: a known key's bad signature rejects the
 * note; signatures by other keys are ignored). Also returns those other signatures (a witness's cosignatures).
 */
export function openNote(note: string, verifier: NoteVerifier): { text: string; others: NoteSignature[] } {
  const { text, signatures } = splitNote(note);
  const mine = signatures.filter((s) => s.name === verifier.name && s.keyId.equals(verifier.keyId));
  if (mine.length === 0)
    throw proofInvalid(`the note is not signed by ${verifier.name} (key ${verifier.keyId.toString('hex')})`, {
      signers: signatures.map((s) => `${s.name}+${s.keyId.toString('hex')}`),
    });
  for (const s of mine) {
    let ok = false;
    try {
      ok = verify(null, Buffer.from(text, 'utf8'), verifier.publicKey, s.signature);
    } catch {
      ok = false;
    }
    if (!ok)
      throw proofInvalid(
        `the signature of ${verifier.name} does not verify: the checkpoint was altered or signed by another key`,
      );
  }
  return { text, others: signatures.filter((s) => !mine.includes(s)) };
}

export interface TreeHead {
  origin: string;
  size: number;
  root: Buffer;
}

/** The checkpoint body (tlog-checkpoint): origin, decimal size, base64 root, each on its own line. */
export function formatCheckpointBody(head: TreeHead): string {
  return `${head.origin}\n${head.size}\n${head.root.toString('base64')}\n`;
}

export function parseCheckpointBody(text: string): TreeHead {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '')
    throw proofInvalid('the checkpoint text is not origin, tree size and root hash lines');
  const [origin, size, root] = lines as [string, string, string];
  if (origin === '') throw proofInvalid('the checkpoint origin line is empty');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw proofInvalid(`the checkpoint tree size ${show(size.slice(0, 40))} is not a decimal number`);
  const hash = strictBase64(root);
  if (hash === null || hash.length !== HASH_SIZE)
    throw proofInvalid('the checkpoint root hash is not the base64 of 32 bytes');
  if (lines.slice(3, -1).some((l) => l === '')) throw proofInvalid('the checkpoint has an empty extension line');
  return { origin, size: Number(size), root: hash };
}

/** A public key given as a C2SP vkey or as an Ed25519 PEM public key (its note name then comes from the note). */
export function verifierFromText(text: string, nameIfPem?: string): NoteVerifier {
  if (!text.includes('-----BEGIN')) return parseVkey(text);
  let key: KeyObject;
  try {
    key = createPublicKey(text);
  } catch (error) {
    throw invalidKey(`the PEM key cannot be read: ${(error as Error).message}`);
  }
  if (nameIfPem === undefined) throw invalidKey('a PEM key needs the note key name');
  return noteVerifier(nameIfPem, key);
}
