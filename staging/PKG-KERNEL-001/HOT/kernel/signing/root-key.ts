import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { fsyncDir } from '../atomic.js';
import { CpError, show } from '../errors.js';
import { keyIdOf } from './keys.js';
import type { TrustedKey } from './signing.js';
import { readTrustStore, trustKey } from './trust.js';
import { rootPaths } from '../root/layout.js';

/** A PEM ed25519 private key is about 120 bytes; anything far larger is not one. */
const MAX_ROOT_KEY_BYTES = 16 * 1024;

/** The root's own signing key: it signs ledger checkpoints and nothing else. State, not governed (HOT/registries). */
export function rootKeyPath(root: string): string {
  return rootPaths(root).rootKey;
}

export interface RootKey {
  key_id: string;
  private_key: KeyObject;
}

/**
 * Genesis: create the root key (mode 0600 from the first byte, published atomically) and trust its public
 * half with the `checkpoint` role, so it can verify checkpoints and never a package signature.
 */
export function createRootKey(root: string, options: { now?: () => Date } = {}): TrustedKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const path = rootKeyPath(root);
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(tmp, path);
  fsyncDir(dirname(path));
  return trustKey(root, publicKey.export({ type: 'spki', format: 'pem' }).toString(), {
    role: 'checkpoint',
    ...(options.now ? { now: options.now } : {}),
  });
}

function invalid(path: string, why: string, cause?: unknown): CpError {
  return new CpError('ERR_ROOT_KEY_INVALID', `root key ${show(path)} ${why}`, {
    hint: 'the root key is created at bootstrap; restore HOT/registries/root-key.pem from a backup (checkpoints cannot be written without it)',
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The root key, or null for a root bootstrapped before root keys existed (it has no checkpoints). */
export function readRootKey(root: string): RootKey | null {
  const path = rootKeyPath(root);
  let size: number;
  try {
    const stat = lstatSync(path);
    if (!stat.isFile()) throw invalid(path, 'is not a regular file');
    size = stat.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (error instanceof CpError) throw error;
    throw invalid(path, `cannot be read: ${(error as Error).message}`, error);
  }
  if (size > MAX_ROOT_KEY_BYTES) throw invalid(path, `is ${size} bytes, not a key`);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: readFileSync(path, 'utf8'), format: 'pem' });
  } catch (error) {
    throw invalid(path, `is not a PEM private key: ${(error as Error).message}`, error);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw invalid(path, `is a ${show(key.asymmetricKeyType)} key, not ed25519`);
  return { key_id: keyIdOf(createPublicKey(key)), private_key: key };
}

/** The trust store's checkpoint keys (the root key's public half, and any kept from an earlier root key). */
export function checkpointKeys(trusted: readonly TrustedKey[]): TrustedKey[] {
  return trusted.filter((k) => k.role === 'checkpoint');
}

/** The root key, checked to be a checkpoint key of this root's trust store (a checkpoint nobody can verify is refused). */
export function readTrustedRootKey(root: string): RootKey | null {
  const key = readRootKey(root);
  if (key === null) return null;
  if (!checkpointKeys(readTrustStore(root)).some((k) => k.key_id === key.key_id)) {
    throw invalid(rootKeyPath(root), `(${key.key_id}) is not a checkpoint key in the trust store`);
  }
  return key;
}
