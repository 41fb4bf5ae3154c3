import { createHash, type KeyObject, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { writeFileAtomic } from '../../atomic.js';
import { isCpError } from '../../errors.js';
import { ed25519FromRaw, openNote, parseCheckpointBody, splitNote, verifierFromText } from './note.js';
import { verifyConsistency } from './proof.js';
import { cosign, type WitnessState } from './witness.js';

/** The largest add-checkpoint body read: 63 proof lines and a checkpoint note with its signatures. */
export const MAX_ADD_CHECKPOINT_BYTES = 32 * 1024;
/** tlog-witness: a client sends at most 63 consistency proof lines. */
const MAX_PROOF_LINES = 63;
const COSIGNATURE_TYPE = 0x04;

export interface WitnessReply {
  status: number;
  contentType: string;
  body: string;
}

const reply = (status: number, body: string, contentType = 'text/plain; charset=utf-8'): WitnessReply => ({
  status,
  contentType,
  body: body.endsWith('\n') ? body : `${body}\n`,
});

/**
 * C2SP tlog-witness `add-checkpoint` for the one log this witness follows (its key `keyText`): the body is `old N`,
 * the consistency proof lines, a blank line and the checkpoint note. Runs synchronously, so checking the old size
 * against the held checkpoint and holding the new one are one step (no request interleaves between them).
 */
export function addCheckpoint(state: WitnessState, body: string, keyText: string, nowMs: number): WitnessReply {
  const split = body.indexOf('\n\n');
  const lines = split < 0 ? [] : body.slice(0, split).split('\n');
  const old = /^old (0|[1-9][0-9]{0,15})$/.exec(lines[0] ?? '');
  if (split < 0 || old === null) return reply(400, 'the body is not "old N", proof lines, a blank line, a checkpoint');
  const proofLines = lines.slice(1);
  if (proofLines.length > MAX_PROOF_LINES) return reply(400, `over ${MAX_PROOF_LINES} consistency proof lines`);
  const proof = proofLines.map((l) => Buffer.from(l, 'base64'));
  if (proof.some((h, i) => h.length !== 32 || h.toString('base64') !== proofLines[i]))
    return reply(400, 'a consistency proof line is not the base64 of 32 bytes');
  const note = body.slice(split + 2);
  let origin: string;
  try {
    origin = splitNote(note).text.split('\n', 1)[0] ?? '';
  } catch (error) {
    return reply(400, isCpError(error) ? error.message : 'the checkpoint is not a signed note');
  }
  let head: ReturnType<typeof parseCheckpointBody>;
  try {
    const verifier = verifierFromText(keyText, origin);
    if (verifier.name !== origin || (state.held !== null && state.held.head.origin !== origin))
      return reply(404, `this witness does not follow the log ${origin}`);
    head = parseCheckpointBody(openNote(note, verifier).text);
  } catch (error) {
    return reply(403, isCpError(error) ? error.message : 'the checkpoint signature does not verify');
  }
  const oldSize = Number(old[1]);
  if (oldSize > head.size) return reply(400, `old size ${oldSize} is over the checkpoint's ${head.size}`);
  const held = state.held;
  const heldSize = held?.head.size ?? 0;
  if (oldSize !== heldSize) return reply(409, `${heldSize}`, 'text/x.tlog.size');
  if (held !== null && oldSize === head.size && !held.head.root.equals(head.root))
    return reply(409, `${heldSize}`, 'text/x.tlog.size');
  if (held !== null) {
    const problem = verifyConsistency(oldSize, head.size, held.head.root, head.root, proof);
    if (problem !== null) return reply(422, `the consistency proof does not verify: ${problem.message}`);
  } else if (proof.length > 0) return reply(422, 'a proof from size 0 must be empty');
  if (head.size > heldSize || held === null) {
    writeFileAtomic(join(state.dir, 'checkpoint'), note);
    state.held = { note, head };
  }
  const cosigned = cosign(state, note, nowMs);
  writeFileAtomic(join(state.dir, 'cosigned'), cosigned);
  return reply(200, cosigned.slice(note.length));
}

/** The witness over HTTP: POST <prefix>/add-checkpoint, each request judged in turn. */
export function witnessServer(state: WitnessState, keyText: string, now: () => number = Date.now): Server {
  return createServer(witnessHandler(state, keyText, now));
}

/** The request listener of witnessServer. */
export function witnessHandler(
  state: WitnessState,
  keyText: string,
  now: () => number = Date.now,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const send = (r: WitnessReply): void => {
      res.writeHead(r.status, { 'content-type': r.contentType, 'content-length': Buffer.byteLength(r.body) });
      res.end(r.body);
    };
    if (req.method !== 'POST' || !(req.url ?? '').endsWith('/add-checkpoint')) {
      send(reply(404, 'POST /add-checkpoint'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ADD_CHECKPOINT_BYTES) {
        send(reply(413, `the body is over ${MAX_ADD_CHECKPOINT_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size <= MAX_ADD_CHECKPOINT_BYTES)
        send(addCheckpoint(state, Buffer.concat(chunks).toString('utf8'), keyText, now()));
    });
  };
}

/** A witness's cosigning key, from its vkey `name+id+base64(0x04 ‖ key)`. */
export interface Cosigner {
  name: string;
  keyId: Buffer;
  publicKey: KeyObject;
}

/** The witness key a vkey names; null when it is not a well-formed tlog-cosignature v1 vkey. */
export function parseCosignerVkey(vkey: string): Cosigner | null {
  // The base64 key may itself hold '+': the name and the key ID are the first two fields.
  const parts = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(vkey.trim());
  if (parts === null) return null;
  const [, name, id, key] = parts as unknown as [string, string, string, string];
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 33 || raw[0] !== COSIGNATURE_TYPE) return null;
  const keyId = createHash('sha256')
    .update(name)
    .update(Buffer.from([0x0a, COSIGNATURE_TYPE]))
    .update(raw.subarray(1))
    .digest()
    .subarray(0, 4);
  if (keyId.toString('hex') !== id) return null;
  return { name, keyId, publicKey: ed25519FromRaw(raw.subarray(1)) };
}

/** Whether `signature` (a signature line's bytes after the key ID: time ‖ Ed25519) cosigns the checkpoint `text`. */
export function cosignatureHolds(cosigner: Cosigner, text: string, signature: Buffer): boolean {
  if (signature.length !== 8 + 64) return false;
  const message = Buffer.from(`cosignature/v1\ntime ${signature.readBigUInt64BE(0)}\n${text}`, 'utf8');
  try {
    return verify(null, message, cosigner.publicKey, signature.subarray(8));
  } catch {
    return false;
  }
}

/**
 * The cosignatures in `lines` (an add-checkpoint reply) that the witness of `vkey` (`name+id+base64(0x04 ‖ key)`)
 * made over `note`: tlog-cosignature v1, the signature over `cosignature/v1`, `time T` and the checkpoint text.
 */
export function verifiedCosignatures(vkey: string, note: string, lines: string): string[] {
  const cosigner = parseCosignerVkey(vkey);
  if (cosigner === null) return [];
  const { text } = splitNote(note);
  return lines.split('\n').filter((line) => {
    const match = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (match === null || match[1] !== cosigner.name) return false;
    const bytes = Buffer.from(match[2] as string, 'base64');
    return bytes.subarray(0, 4).equals(cosigner.keyId) && cosignatureHolds(cosigner, text, bytes.subarray(4));
  });
}
