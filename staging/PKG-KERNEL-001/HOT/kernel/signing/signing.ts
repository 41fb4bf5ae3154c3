import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../canonical.js';
import { CpError, show } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import { keyIdOf, parsePublicKey } from './keys.js';

/** signature.json inside an archive. */
export interface PackageSignature {
  algorithm: 'ed25519';
  key_id: string;
  /** base64 ed25519 signature over the UTF-8 bytes of canonicalJson(manifest). */
  signature: string;
}

export interface TrustedKey {
  key_id: string;
  public_key_pem: string;
  added_at: string;
  /** Packages this key may take over through `replaces` although another key signed them. */
  may_replace?: string[];
  /** Absent = 'package'. A 'checkpoint' key (the root key) signs ledger checkpoints and never verifies a package. */
  role?: 'package' | 'checkpoint';
}

export type SignatureStatus = 'valid' | 'unsigned' | 'invalid' | 'untrusted_key';

function parsePrivateKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new CpError('ERR_KEY_INVALID', `signing key is not a PEM private key: ${(error as Error).message}`, {
      hint: 'pass the cplane-signing.key file written by `cplane keys generate`',
      cause: error,
    });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new CpError('ERR_KEY_INVALID', `signing key is a ${show(key.asymmetricKeyType)} key, not ed25519`, {
      hint: 'cplane signs with ed25519 keys only',
    });
  }
  return key;
}

/** The key id of a private signing key; refuses (ERR_KEY_INVALID) anything that is not an ed25519 private key. */
export function signingKeyId(privateKeyPem: string): string {
  return keyIdOf(createPublicKey(parsePrivateKey(privateKeyPem)));
}

/** Sign the canonical manifest: it pins every asset digest, so it covers every byte the package installs. */
export function signManifest(manifest: Manifest, privateKeyPem: string): PackageSignature {
  const key = parsePrivateKey(privateKeyPem);
  const signature = sign(null, Buffer.from(canonicalJson(manifest), 'utf8'), key);
  return { algorithm: 'ed25519', key_id: keyIdOf(createPublicKey(key)), signature: signature.toString('base64') };
}

/**
 * A trusted key parsed, and its key id checked, once per trust-store entry object (readTrustStore returns
 * fresh ones on every read): checking every installed package against one store parses each key once,
 * not once per package. null when the entry is not a usable key or its key id does not match it.
 */
const parsedTrustedKeys = new WeakMap<TrustedKey, KeyObject | null>();

export function trustedPublicKey(key: TrustedKey): KeyObject | null {
  let parsed = parsedTrustedKeys.get(key);
  if (parsed === undefined) {
    try {
      const publicKey = parsePublicKey(key.public_key_pem, `trusted key ${key.key_id}`);
      parsed = keyIdOf(publicKey) === key.key_id ? publicKey : null;
    } catch {
      parsed = null;
    }
    parsedTrustedKeys.set(key, parsed);
  }
  return parsed;
}

/**
 * Check an archive's signature against trusted keys. A signature is `valid` only when its key is
 * trusted, its key id matches that key, and it verifies over the canonical manifest. `canonical` is
 * canonicalJson(manifest) when the caller already computed it (G5 hashes it too).
 */
export function checkSignature(
  archive: { manifest: Manifest; signature: PackageSignature | null; canonical?: string },
  trusted: readonly TrustedKey[],
): { status: SignatureStatus; key_id: string | null } {
  const sig = archive.signature;
  if (sig === null) return { status: 'unsigned', key_id: null };
  const key = trusted.find((k) => k.key_id === sig.key_id && (k.role ?? 'package') === 'package');
  if (!key) return { status: 'untrusted_key', key_id: sig.key_id };
  let ok = false;
  try {
    const publicKey = trustedPublicKey(key);
    const canonical = archive.canonical ?? canonicalJson(archive.manifest);
    ok =
      publicKey !== null &&
      verify(null, Buffer.from(canonical, 'utf8'), publicKey, Buffer.from(sig.signature, 'base64'));
  } catch {
    ok = false;
  }
  return { status: ok ? 'valid' : 'invalid', key_id: sig.key_id };
}
