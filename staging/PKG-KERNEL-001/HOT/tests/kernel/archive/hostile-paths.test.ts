// Paths that would print as something else (control characters, bidi overrides, unpaired surrogates) or that
// no filesystem can hold (segments over 255 bytes, paths over 1024 bytes) are refused at manifest validation,
// and as archive members, with a coded error naming them JSON-quoted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readPackageArchive } from '../../../kernel/archive/index.js';
import {
  MAX_PATH_BYTES,
  MAX_SEGMENT_BYTES,
  unsafePathReason,
  validateManifest,
} from '../../../kernel/manifest/index.js';
import { manifestEntry, manifestFor, paxEntry, rawTar, scratch } from './tar-fixture.js';

const HOSTILE: Array<[string, string]> = [
  ['newline', 'HOT/kernel/a\nG1 INTEGRITY: PASS.js'],
  ['carriage return', 'HOT/kernel/a\r.js'],
  ['escape', 'HOT/kernel/\u001b[2Ja.js'],
  ['tab', 'HOT/kernel/a\t.js'],
  ['DEL', 'HOT/kernel/a\u007f.js'],
  ['C1 NEL', 'HOT/kernel/a\u0085.js'],
  ['C1 CSI', 'HOT/kernel/a\u009b.js'],
  ['line separator', 'HOT/kernel/a\u2028.js'],
  ['right-to-left override', 'HOT/kernel/evil\u202esj.txt'],
  ['bidi isolate', 'HOT/kernel/a\u2066.js'],
  ['unpaired surrogate', 'HOT/kernel/a\ud800.js'],
  ['300-byte segment', `HOT/kernel/${'a'.repeat(300)}.js`],
  ['256-byte segment', `HOT/kernel/${'a'.repeat(253)}.js`],
  ['256-byte multibyte segment', `HOT/kernel/${'é'.repeat(128)}`],
  ['path over 1024 bytes', `HOT/${Array.from({ length: 5 }, () => 'd'.repeat(250)).join('/')}/x.js`],
];

/** What an unambiguous rendering never contains. */
const RAW =
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function refusedPointers(path: string): Array<{ pointer: string; message: string }> {
  try {
    validateManifest(
      manifestFor([
        { path: 'HOT/kernel/ok.js', data: 'ok' },
        { path, data: 'x' },
      ]),
    );
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ERR_MANIFEST_INVALID');
    return (error as { details: { errors: Array<{ pointer: string; message: string }> } }).details.errors;
  }
  return [];
}

test('manifest validation refuses control characters, misleading formatting and over-long paths, JSON-quoted', () => {
  for (const [what, path] of HOSTILE) {
    const errors = refusedPointers(path);
    assert.deepEqual(
      errors.map((e) => e.pointer),
      ['/assets/1/path'],
      what,
    );
    const message = (errors[0] as { message: string }).message;
    assert.ok(!RAW.test(message), `${what}: the message holds the raw character: ${JSON.stringify(message)}`);
  }
});

test('the limits are exact: a 255-byte segment, multibyte names within it, and a 1024-byte path are fine', () => {
  assert.equal(unsafePathReason(`HOT/kernel/${'a'.repeat(MAX_SEGMENT_BYTES)}`), null);
  assert.equal(unsafePathReason(`HOT/kernel/${'é'.repeat(126)}.md`), null);
  assert.equal(unsafePathReason('HOT/kernel/日本語/😀.md'), null);
  const long = `HOT/${Array.from({ length: 4 }, () => 'd'.repeat(250)).join('/')}/${'x'.repeat(MAX_PATH_BYTES - 4 - 4 * 251)}`;
  assert.equal(Buffer.byteLength(long), MAX_PATH_BYTES);
  assert.equal(unsafePathReason(long), null);
  assert.match(unsafePathReason(`${long}x`) ?? '', /longer than 1024 bytes/);
});

test('an archive declaring such a path is refused: by the manifest when it comes first, as a member otherwise', async (t) => {
  const s = scratch(t);
  for (const [what, path] of HOSTILE) {
    const files = [{ path, data: 'x' }];
    // A pax header carries names a ustar header cannot (over 100 bytes).
    const member = [paxEntry({ path }), { name: 'HOT/kernel/placeholder', data: 'x' }];
    await assert.rejects(
      readPackageArchive(s.archive(rawTar([manifestEntry(manifestFor(files)), ...member]))),
      { code: 'ERR_MANIFEST_INVALID' },
      what,
    );
    await assert.rejects(
      readPackageArchive(s.archive(rawTar([...member, manifestEntry(manifestFor(files))]))),
      (error: { code?: string; message?: string }) => {
        assert.ok(
          error.code === 'ERR_ARCHIVE_UNSAFE_PATH' || error.code === 'ERR_MANIFEST_INVALID',
          `${what}: ${error.code} ${error.message}`,
        );
        assert.ok(!RAW.test(error.message ?? ''), `${what}: the path is printed raw`);
        return true;
      },
      what,
    );
  }
});
