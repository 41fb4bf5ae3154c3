// An archive read against the SRI it was recorded with (an index, bootstrap.json): hashed while it is read,
// refused with both values when it differs, and the SRI itself parsed at the edge.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkIntegrity, parseIntegrity, readPackageArchive } from '../../../kernel/archive/index.js';
import { manifestEntry, manifestFor, rawTar, scratch, sri512 } from './tar-fixture.js';

const FILE = { path: 'HOT/kernel/a.js', data: 'export const a = 1;\n' };
const b64 = (algorithm: string, data: string): string => createHash(algorithm).update(data).digest('base64');

function archives(t: Parameters<typeof scratch>[0]): { dir: string; good: string; other: string } {
  const s = scratch(t);
  const good = s.archive(rawTar([manifestEntry(manifestFor([FILE])), { name: FILE.path, data: FILE.data }]));
  const changed = { ...FILE, data: 'export const a = 2;\n' };
  const other = s.archive(rawTar([manifestEntry(manifestFor([changed])), { name: FILE.path, data: changed.data }]));
  return { dir: s.dir, good, other };
}

type Coded = Error & { code?: string; details?: Record<string, unknown> };

test('an archive matching its SRI reads, with sha512 alone or followed by sha256', async (t) => {
  const { good } = archives(t);
  const bytes = readFileSync(good);
  const sri = sri512(bytes);
  assert.equal((await readPackageArchive(good, { integrity: sri })).integrity, sri);
  const both = `${sri} sha256-${createHash('sha256').update(bytes).digest('base64')}`;
  assert.equal((await readPackageArchive(good, { integrity: both })).integrity, sri);
  assert.equal((await readPackageArchive(good)).integrity, sri, 'without an expected SRI it is computed');
});

test('an archive whose SRI does not match is refused, naming expected and actual SRI; nothing written', async (t) => {
  const { dir, good, other } = archives(t);
  const expected = sri512(readFileSync(good));
  const actual = sri512(readFileSync(other));
  await assert.rejects(readPackageArchive(other, { integrity: expected }), (error: Coded) => {
    assert.equal(error.code, 'ERR_INTEGRITY_MISMATCH');
    assert.deepEqual([error.details?.expected, error.details?.actual], [expected, actual]);
    assert.ok(error.message.includes(expected) && error.message.includes(actual), error.message);
    return true;
  });
  // A well-formed archive is not enough: the sha256 next to a wrong sha512 does not rescue it.
  const withSha256 = `${expected} sha256-${createHash('sha256').update(readFileSync(other)).digest('base64')}`;
  await assert.rejects(readPackageArchive(other, { integrity: withSha256 }), { code: 'ERR_INTEGRITY_MISMATCH' });
  assert.deepEqual(readdirSync(dir).sort(), [good, other].map((p) => p.slice(dir.length + 1)).sort());
});

test('in-memory bytes are checked the same way (CP_BOOTSTRAP members)', () => {
  const data = Buffer.from('archive bytes');
  checkIntegrity(data, sri512(data), 'member');
  assert.throws(
    () => checkIntegrity(Buffer.from('archive byteZ'), sri512(data), 'member'),
    (error: Coded) =>
      error.code === 'ERR_INTEGRITY_MISMATCH' &&
      error.details?.expected === sri512(data) &&
      error.details?.actual === sri512('archive byteZ'),
  );
});

test('a malformed SRI is refused before the archive is opened', async (t) => {
  const { good } = archives(t);
  const sha = b64('sha512', 'x');
  const malformed: unknown[] = [
    '',
    'sha512',
    `sha512:${sha}`,
    `SHA512-${sha}`,
    `sha512-${sha.slice(0, -4)}`,
    `sha512-${sha.replace(/.$/, '!')}`,
    `sha512-${sha}  sha512-${sha}`,
    `sha512-${sha}?opt`,
    `sha512-${sha}\n`,
    `sha512-${'A'.repeat(600)}`,
    42,
    null,
  ];
  for (const value of malformed) {
    assert.throws(() => parseIntegrity(value, 'test'), { code: 'ERR_INTEGRITY_MALFORMED' }, String(value));
    await assert.rejects(
      readPackageArchive(join(good, 'not-there'), { integrity: value as string }),
      { code: 'ERR_INTEGRITY_MALFORMED' },
      String(value),
    );
  }
});

test('an SRI naming only algorithms that are not checked is refused as unsupported', async (t) => {
  const { good } = archives(t);
  const bytes = readFileSync(good).toString('latin1');
  for (const value of [
    `md5-${b64('md5', bytes)}`,
    `sha1-${b64('sha1', bytes)}`,
    `sha384-${b64('sha384', bytes)}`,
    `sha256-${b64('sha256', bytes)}`,
    `sha1-${b64('sha1', bytes)} sha256-${b64('sha256', bytes)}`,
  ]) {
    await assert.rejects(
      readPackageArchive(good, { integrity: value }),
      (error: Coded) => error.code === 'ERR_INTEGRITY_UNSUPPORTED' && error.message.includes(value),
      value,
    );
  }
  // An unknown algorithm next to a good sha512 is refused too: nothing in an SRI goes unchecked silently.
  const mixed = `${sri512(readFileSync(good))} md5-${b64('md5', bytes)}`;
  await assert.rejects(readPackageArchive(good, { integrity: mixed }), { code: 'ERR_INTEGRITY_UNSUPPORTED' });
});
