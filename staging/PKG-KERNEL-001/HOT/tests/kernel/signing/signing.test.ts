import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import {
  checkSignature,
  generateSigningKeyPair,
  parsePublicKey,
  readTrustStore,
  signingKeyId,
  signManifest,
  trustKey,
  trustStorePath,
} from '../../../kernel/signing/index.js';
import { validateManifest } from '../../../kernel/manifest/index.js';
import { canonicalJson } from '../../../kernel/canonical.js';
import { manifestFor, scratch } from '../archive/tar-fixture.js';
import { rootPaths } from '../../../kernel/root/layout.js';

const manifest = validateManifest(manifestFor([{ path: 'HOT/kernel/a.js', data: 'a' }])).manifest;

test('a signature over the canonical manifest verifies with the trusted key', () => {
  const keys = generateSigningKeyPair();
  const signature = signManifest(manifest, keys.private_key_pem);
  assert.equal(signature.key_id, keys.key_id);
  assert.match(signature.key_id, /^ed25519:[0-9a-f]{16}$/);
  const trusted = [{ key_id: keys.key_id, public_key_pem: keys.public_key_pem, added_at: '2026-01-01T00:00:00.000Z' }];
  assert.deepEqual(checkSignature({ manifest, signature }, trusted), { status: 'valid', key_id: keys.key_id });
  // Key order does not matter: the signature covers the canonical form.
  const reordered = JSON.parse(
    JSON.stringify(Object.fromEntries(Object.entries(manifest).reverse())),
  ) as typeof manifest;
  assert.equal(checkSignature({ manifest: reordered, signature }, trusted).status, 'valid');
});

test('unsigned, untrusted, tampered and forged-key-id signatures are told apart', () => {
  const keys = generateSigningKeyPair();
  const other = generateSigningKeyPair();
  const trusted = [{ key_id: keys.key_id, public_key_pem: keys.public_key_pem, added_at: '2026-01-01T00:00:00.000Z' }];
  const signature = signManifest(manifest, keys.private_key_pem);
  assert.deepEqual(checkSignature({ manifest, signature: null }, trusted), { status: 'unsigned', key_id: null });
  assert.equal(
    checkSignature({ manifest, signature: signManifest(manifest, other.private_key_pem) }, trusted).status,
    'untrusted_key',
  );
  const tampered = { ...manifest, assets: [{ ...manifest.assets[0]!, sha256: `sha256:${'0'.repeat(64)}` }] };
  assert.equal(checkSignature({ manifest: tampered, signature }, trusted).status, 'invalid');
  const forged = { ...signManifest(manifest, other.private_key_pem), key_id: keys.key_id };
  assert.equal(checkSignature({ manifest, signature: forged }, trusted).status, 'invalid');
});

test('a trust entry whose key id is not its key never verifies, on every check against it; a canonical form passed in is what is verified', () => {
  const keys = generateSigningKeyPair();
  const other = generateSigningKeyPair();
  const mislabelled = [
    { key_id: keys.key_id, public_key_pem: other.public_key_pem, added_at: '2026-01-01T00:00:00.000Z' },
  ];
  const signature = { ...signManifest(manifest, other.private_key_pem), key_id: keys.key_id };
  // Twice: the entry is parsed once and reused, and the reuse must keep the key-id check.
  assert.equal(checkSignature({ manifest, signature }, mislabelled).status, 'invalid');
  assert.equal(checkSignature({ manifest, signature }, mislabelled).status, 'invalid');
  const trusted = [{ key_id: keys.key_id, public_key_pem: keys.public_key_pem, added_at: '2026-01-01T00:00:00.000Z' }];
  const good = signManifest(manifest, keys.private_key_pem);
  assert.equal(
    checkSignature({ manifest, signature: good, canonical: canonicalJson(manifest) }, trusted).status,
    'valid',
  );
  assert.equal(
    checkSignature({ manifest, signature: good, canonical: canonicalJson({ ...manifest, version: '9.9.9' }) }, trusted)
      .status,
    'invalid',
  );
});

test('signing refuses keys that are not ed25519 private keys', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  assert.throws(() => signManifest(manifest, rsa), { code: 'ERR_KEY_INVALID' });
  assert.throws(() => signManifest(manifest, 'not a key'), { code: 'ERR_KEY_INVALID' });
});

test('trust store: absent trusts nothing; trustKey is atomic, idempotent and uses the injected clock', (t) => {
  const s = scratch(t);
  assert.deepEqual(readTrustStore(s.dir), []);
  const keys = generateSigningKeyPair();
  const entry = trustKey(s.dir, keys.public_key_pem, { now: () => new Date('2026-02-03T04:05:06.000Z') });
  assert.deepEqual(entry, {
    key_id: keys.key_id,
    public_key_pem: keys.public_key_pem,
    added_at: '2026-02-03T04:05:06.000Z',
  });
  assert.deepEqual(trustKey(s.dir, keys.public_key_pem), entry);
  assert.deepEqual(readTrustStore(s.dir), [entry]);
  assert.deepEqual(JSON.parse(readFileSync(trustStorePath(s.dir), 'utf8')), { keys: [entry] });
  assert.throws(() => trustKey(s.dir, keys.private_key_pem.replace('PRIVATE', 'PUBLIC')), { code: 'ERR_KEY_INVALID' });
});

test('a damaged trust store is refused with a code, not treated as empty', (t) => {
  const s = scratch(t);
  mkdirSync(rootPaths(s.dir).registries, { recursive: true });
  writeFileSync(trustStorePath(s.dir), '{"keys": [{"key_id": "x"}]}');
  assert.throws(() => readTrustStore(s.dir), { code: 'ERR_TRUST_STORE_INVALID' });
  writeFileSync(trustStorePath(s.dir), 'nope');
  assert.throws(() => readTrustStore(s.dir), { code: 'ERR_TRUST_STORE_INVALID' });
});

test('key helpers: signingKeyId matches the generated id; a non-ed25519 public key is refused', () => {
  const keys = generateSigningKeyPair();
  assert.equal(signingKeyId(keys.private_key_pem), keys.key_id);
  const rsaPublic = generateKeyPairSync('rsa', { modulusLength: 1024 })
    .publicKey.export({ type: 'spki', format: 'pem' })
    .toString();
  assert.throws(
    () => parsePublicKey(rsaPublic),
    (e: { code: string; message: string }) => e.code === 'ERR_KEY_INVALID' && /not ed25519/.test(e.message),
  );
  assert.throws(() => signingKeyId(keys.public_key_pem), { code: 'ERR_KEY_INVALID' });
});
