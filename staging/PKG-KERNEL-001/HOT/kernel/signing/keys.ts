import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../canonical.js';
import { CpError, show } from '../errors.js';

/** `ed25519:` + the first 16 hex digits of sha256 over the DER (SPKI) public key. */
export function keyIdOf(publicKey: KeyObject): string {
  return `ed25519:${sha256Hex(publicKey.export({ type: 'spki', format: 'der' })).slice(0, 16)}`;
}

/** Parse an ed25519 public key in PEM form; anything else is ERR_KEY_INVALID. */
export function parsePublicKey(pem: string, source = 'public key'): KeyObject {
  // node:crypto would derive a public key from a private one; a private key here is a mistake to name.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw new CpError('ERR_KEY_INVALID', `${source} is a private key`, {
      hint: 'pass the .pub file; keep the private key secret',
      details: { source },
    });
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new CpError('ERR_KEY_INVALID', `${source} is not a PEM public key: ${(error as Error).message}`, {
      hint: 'pass the .pub file written by `cplane keys generate`',
      details: { source },
      cause: error,
    });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new CpError('ERR_KEY_INVALID', `${source} is a ${show(key.asymmetricKeyType)} key, not ed25519`, {
      hint: 'cplane signs with ed25519 keys only',
      details: { source },
    });
  }
  return key;
}

export interface GeneratedKeyPair {
  key_id: string;
  private_key_pem: string;
  public_key_pem: string;
}

export function generateSigningKeyPair(): GeneratedKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    key_id: keyIdOf(publicKey),
    private_key_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}
