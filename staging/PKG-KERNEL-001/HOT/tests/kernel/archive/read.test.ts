import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { readPackageArchive } from '../../../kernel/archive/index.js';
import { manifestEntry, manifestFor, paxEntry, rawTar, scratch, sha256, sri512, type RawEntry } from './tar-fixture.js';

const LEDGER = { path: 'HOT/kernel/ledger.js', data: 'export const x = 1;\n' };
const README = { path: 'HOT/docs/README.md', data: '# hello\n' };
const FILES = [LEDGER, README];
const fileEntries: RawEntry[] = FILES.map((f) => ({ name: f.path, data: f.data }));

async function refused(
  path: string,
  code: string,
  opts = {},
): Promise<Error & { code: string; details: Record<string, unknown> }> {
  let caught: unknown;
  await assert.rejects(
    readPackageArchive(path, opts),
    (error: Error & { code?: string }) => {
      caught = error;
      return error.code === code;
    },
    `expected ${code}`,
  );
  return caught as Error & { code: string; details: Record<string, unknown> };
}

/** The reader writes nothing: the scratch dir holds exactly the archives the test made. */
function assertOnlyArchives(dir: string, count: number): void {
  assert.equal(readdirSync(dir).length, count);
}

test('reads a well-formed archive: manifest, verified files, integrity of the file bytes', async (t) => {
  const s = scratch(t);
  const path = s.archive(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries]));
  const archive = await readPackageArchive(path);
  assert.equal(archive.manifest.package_id, 'PKG-FIXTURE-001');
  assert.equal(archive.files.get(LEDGER.path)?.toString(), LEDGER.data);
  assert.equal(archive.files.size, 2);
  assert.equal(archive.signature, null);
  assert.equal(archive.integrity, sri512(readFileSync(path)));
  assert.deepEqual(JSON.parse(archive.manifestBytes.toString()), manifestFor(FILES));
});

test('accepts ./manifest.json, ./-prefixed members and directory entries on the way to assets', async (t) => {
  const s = scratch(t);
  const path = s.archive(
    rawTar([
      { name: './', type: '5' },
      { name: './HOT/', type: '5' },
      { name: './HOT/kernel/', type: '5' },
      manifestEntry(manifestFor(FILES), './manifest.json'),
      ...FILES.map((f) => ({ name: `./${f.path}`, data: f.data })),
    ]),
  );
  const archive = await readPackageArchive(path);
  assert.deepEqual([...archive.files.keys()].sort(), [README.path, LEDGER.path].sort());
});

test('the manifest may come after the assets (plain `tar czf` order)', async (t) => {
  const s = scratch(t);
  const archive = await readPackageArchive(s.archive(rawTar([...fileEntries, manifestEntry(manifestFor(FILES))])));
  assert.equal(archive.files.get(README.path)?.toString(), README.data);
});

const unsafe: Array<[string, string]> = [
  ['../x', '".." segment'],
  ['/etc/x', 'absolute path'],
  ['a/../../x', '".." segment'],
  ['HOT//x', 'empty segment'],
  ['HOT\\..\\x', 'backslash in path'],
];
for (const [name, reason] of unsafe) {
  test(`refuses member path ${JSON.stringify(name)} (${reason})`, async (t) => {
    const s = scratch(t);
    const error = await refused(
      s.archive(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries, { name, data: 'evil' }])),
      'ERR_ARCHIVE_UNSAFE_PATH',
    );
    assert.equal(error.details.member, name);
    assert.equal(error.details.reason, reason);
    assertOnlyArchives(s.dir, 1);
  });
}

test('refuses a pax header whose path override escapes, though the ustar name is harmless', async (t) => {
  const s = scratch(t);
  const path = s.archive(
    rawTar([
      manifestEntry(manifestFor(FILES)),
      ...fileEntries,
      paxEntry({ path: '../../escape.js' }),
      { name: 'HOT/kernel/harmless.js', data: 'evil' },
    ]),
  );
  const error = await refused(path, 'ERR_ARCHIVE_UNSAFE_PATH');
  assert.equal(error.details.member, '../../escape.js');
});

test('refuses a pax path override that renames a file onto an undeclared path', async (t) => {
  const s = scratch(t);
  const path = s.archive(
    rawTar([
      manifestEntry(manifestFor(FILES)),
      paxEntry({ path: 'HOT/kernel/other.js' }),
      { name: LEDGER.path, data: LEDGER.data },
      { name: README.path, data: README.data },
    ]),
  );
  const error = await refused(path, 'ERR_ARCHIVE_UNDECLARED_MEMBER');
  assert.equal(error.details.member, 'HOT/kernel/other.js');
});

const types: Array<[string, string, string, string]> = [
  ['2', 'symlink', 'ERR_ARCHIVE_LINK', '/etc/passwd'],
  ['1', 'hard link', 'ERR_ARCHIVE_LINK', 'HOT/kernel/ledger.js'],
  ['3', 'character device', 'ERR_ARCHIVE_SPECIAL_FILE', ''],
  ['4', 'block device', 'ERR_ARCHIVE_SPECIAL_FILE', ''],
  ['6', 'FIFO', 'ERR_ARCHIVE_SPECIAL_FILE', ''],
  ['S', 'sparse file (unsupported type)', 'ERR_ARCHIVE_SPECIAL_FILE', ''],
];
for (const [type, label, code, linkname] of types) {
  test(`refuses a ${label} member`, async (t) => {
    const s = scratch(t);
    const error = await refused(
      s.archive(
        rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries, { name: 'HOT/kernel/evil', type, linkname }]),
      ),
      code,
    );
    assert.equal(error.details.member, 'HOT/kernel/evil');
  });
}

test('refuses duplicate members, including ./ and case variants', async (t) => {
  const s = scratch(t);
  await refused(
    s.archive(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries, { name: LEDGER.path, data: LEDGER.data }])),
    'ERR_ARCHIVE_DUPLICATE_MEMBER',
  );
  await refused(
    s.archive(
      rawTar([manifestEntry(manifestFor(FILES)), manifestEntry(manifestFor(FILES), './manifest.json'), ...fileEntries]),
    ),
    'ERR_ARCHIVE_DUPLICATE_MEMBER',
  );
  const upper = { path: 'HOT/Kernel/ledger.js', data: 'other' };
  const error = await refused(
    s.archive(rawTar([manifestEntry(manifestFor([...FILES])), ...fileEntries, { name: upper.path, data: upper.data }])),
    'ERR_ARCHIVE_DUPLICATE_MEMBER',
  );
  assert.match(error.message, /differing only in case/);
});

test('refuses an undeclared member, at its header when the manifest came first', async (t) => {
  const s = scratch(t);
  const error = await refused(
    s.archive(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries, { name: 'HOT/kernel/extra.js', data: 'x' }])),
    'ERR_ARCHIVE_UNDECLARED_MEMBER',
  );
  assert.equal(error.details.member, 'HOT/kernel/extra.js');
  await refused(
    s.archive(rawTar([{ name: 'HOT/kernel/extra.js', data: 'x' }, ...fileEntries, manifestEntry(manifestFor(FILES))])),
    'ERR_ARCHIVE_UNDECLARED_MEMBER',
  );
  await refused(
    s.archive(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries, { name: 'HOT/unrelated/', type: '5' }])),
    'ERR_ARCHIVE_UNDECLARED_MEMBER',
  );
});

test('refuses a declared asset missing from the archive', async (t) => {
  const s = scratch(t);
  const error = await refused(
    s.archive(rawTar([manifestEntry(manifestFor(FILES)), fileEntries[0] as RawEntry])),
    'ERR_ARCHIVE_MISSING_ASSET',
  );
  assert.equal(error.details.member, README.path);
});

test('refuses a digest mismatch (same size, other bytes), whichever comes first', async (t) => {
  const s = scratch(t);
  const tampered = LEDGER.data.replace('1', '2');
  const error = await refused(
    s.archive(
      rawTar([manifestEntry(manifestFor(FILES)), { name: LEDGER.path, data: tampered }, fileEntries[1] as RawEntry]),
    ),
    'ERR_ARCHIVE_DIGEST_MISMATCH',
  );
  assert.equal(error.details.expected, sha256(LEDGER.data));
  assert.equal(error.details.actual, sha256(tampered));
  await refused(
    s.archive(
      rawTar([{ name: LEDGER.path, data: tampered }, fileEntries[1] as RawEntry, manifestEntry(manifestFor(FILES))]),
    ),
    'ERR_ARCHIVE_DIGEST_MISMATCH',
  );
});

test('refuses a size mismatch at the header, before reading the body', async (t) => {
  const s = scratch(t);
  const error = await refused(
    s.archive(
      rawTar([
        manifestEntry(manifestFor(FILES)),
        { name: LEDGER.path, data: `${LEDGER.data}more` },
        fileEntries[1] as RawEntry,
      ]),
    ),
    'ERR_ARCHIVE_SIZE_MISMATCH',
  );
  assert.deepEqual([error.details.expected, error.details.actual], [LEDGER.data.length, LEDGER.data.length + 4]);
});

test('refuses more members than the limit', async (t) => {
  const s = scratch(t);
  const many = Array.from({ length: 20 }, (_, i) => ({ path: `HOT/kernel/f${i}.js`, data: `${i}` }));
  const path = s.archive(
    rawTar([manifestEntry(manifestFor(many)), ...many.map((f) => ({ name: f.path, data: f.data }))]),
  );
  await readPackageArchive(path, { limits: { maxMembers: 21 } });
  const error = await refused(path, 'ERR_ARCHIVE_TOO_MANY_MEMBERS', { limits: { maxMembers: 20 } });
  assert.equal(error.details.max_members, 20);
});

test('refuses a member whose header declares more than the member limit, before inflating its body', async (t) => {
  const s = scratch(t);
  const big = { path: 'HOT/kernel/big.bin', data: Buffer.alloc(4 * 1024 * 1024) };
  const error = await refused(
    s.archive(rawTar([manifestEntry(manifestFor([big])), { name: big.path, data: big.data }])),
    'ERR_ARCHIVE_TOO_LARGE',
    { limits: { maxMemberBytes: 1024 * 1024 } },
  );
  assert.equal(error.details.size, 4 * 1024 * 1024);
});

test('a decompression bomb is stopped at the byte limit, long before it is fully inflated', async (t) => {
  const s = scratch(t);
  // 64 MiB of zero blocks after the entries gzip to ~64 KiB; no header declares them, so only counting inflated bytes stops them.
  const bomb = Buffer.concat([
    rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries]).subarray(0, -1024),
    Buffer.alloc(64 * 1024 * 1024),
  ]);
  const path = join(s.dir, 'bomb.tar.gz');
  const gz = gzipSync(bomb, { level: 9 });
  assert.ok(gz.length < 256 * 1024);
  (await import('node:fs')).writeFileSync(path, gz);
  const limit = 1024 * 1024;
  const error = await refused(path, 'ERR_ARCHIVE_TOO_LARGE', { limits: { maxTotalBytes: limit } });
  assert.ok((error.details.inflated_bytes as number) > limit);
  assert.ok(
    (error.details.inflated_bytes as number) < 4 * limit,
    `stopped after ${String(error.details.inflated_bytes)} bytes`,
  );
});

test('refuses an archive without a manifest, and an invalid manifest with JSON pointers', async (t) => {
  const s = scratch(t);
  await refused(s.archive(rawTar(fileEntries)), 'ERR_ARCHIVE_NO_MANIFEST');
  const error = await refused(
    s.archive(rawTar([manifestEntry({ ...manifestFor(FILES), layer: 7 }), ...fileEntries])),
    'ERR_MANIFEST_INVALID',
  );
  assert.deepEqual(
    (error.details.errors as Array<{ pointer: string }>).map((e) => e.pointer),
    ['/layer'],
  );
  await refused(
    s.archive(rawTar([{ name: 'manifest.json', data: '{not json' }, ...fileEntries])),
    'ERR_MANIFEST_INVALID',
  );
});

test('unknown manifest fields: refused when strict, warnings otherwise', async (t) => {
  const s = scratch(t);
  const path = s.archive(rawTar([manifestEntry(manifestFor(FILES, { spec_id: 'SPEC-1' })), ...fileEntries]));
  const error = await refused(path, 'ERR_MANIFEST_INVALID');
  assert.equal((error.details.errors as Array<{ pointer: string }>)[0]?.pointer, '/spec_id');
  const lenient = await readPackageArchive(path, { strict: false });
  assert.deepEqual(lenient.warnings, [
    { code: 'MANIFEST_UNKNOWN_FIELD', message: '/spec_id: unknown field "spec_id"' },
  ]);
});

test('refuses damaged input: not gzip, bad header checksum, truncated body, missing file', async (t) => {
  const s = scratch(t);
  const notGzip = join(s.dir, 'plain.tar.gz');
  (await import('node:fs')).writeFileSync(notGzip, rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries]));
  await refused(notGzip, 'ERR_ARCHIVE_CORRUPT');
  const tar = rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries]);
  const badSum = Buffer.from(tar);
  badSum[5] = (badSum[5] as number) ^ 0x01;
  await refused(s.archive(badSum), 'ERR_ARCHIVE_CORRUPT');
  await refused(s.archive(tar.subarray(0, 512 * 3 + 10)), 'ERR_ARCHIVE_CORRUPT');
  await refused(join(s.dir, 'absent.tar.gz'), 'ERR_ARCHIVE_NOT_FOUND');
});

test('refuses a tar stream that is compressed twice', async (t) => {
  const s = scratch(t);
  await refused(
    s.archive(gzipSync(rawTar([manifestEntry(manifestFor(FILES)), ...fileEntries]))),
    'ERR_ARCHIVE_CORRUPT',
  );
});

test('refuses a malformed signature.json rather than treating the package as unsigned', async (t) => {
  const s = scratch(t);
  await refused(
    s.archive(
      rawTar([
        manifestEntry(manifestFor(FILES)),
        { name: 'signature.json', data: '{"algorithm":"rsa"}' },
        ...fileEntries,
      ]),
    ),
    'ERR_SIGNATURE_MALFORMED',
  );
});

test('refuses a signature.json that is not JSON', async (t) => {
  const s = scratch(t);
  await refused(
    s.archive(rawTar([manifestEntry(manifestFor(FILES)), { name: 'signature.json', data: 'sig' }, ...fileEntries])),
    'ERR_SIGNATURE_MALFORMED',
  );
});

test('refuses a GNU long-name (L) record that escapes, though the ustar name is harmless', async (t) => {
  const s = scratch(t);
  const path = s.archive(
    rawTar([
      manifestEntry(manifestFor(FILES)),
      ...fileEntries,
      { name: '././@LongLink', type: 'L', data: '../../escape.js\0' },
      { name: 'HOT/kernel/harmless.js', data: 'evil' },
    ]),
  );
  const error = await refused(path, 'ERR_ARCHIVE_UNSAFE_PATH');
  assert.equal(error.details.member, '../../escape.js');
});

test('a global pax header cannot rename members, and a pax header on a symlink still leaves it a link', async (t) => {
  const s = scratch(t);
  const global = { ...paxEntry({ path: '../global.js' }), type: 'g' };
  const read = await readPackageArchive(s.archive(rawTar([global, manifestEntry(manifestFor(FILES)), ...fileEntries])));
  assert.equal(read.files.size, 2);
  await refused(
    s.archive(
      rawTar([
        manifestEntry(manifestFor(FILES)),
        ...fileEntries,
        paxEntry({ linkpath: '/etc/passwd' }),
        { name: 'HOT/kernel/l', type: '2', linkname: 'x' },
      ]),
    ),
    'ERR_ARCHIVE_LINK',
  );
});

test('an empty file and an empty tar stream are refused with codes', async (t) => {
  const s = scratch(t);
  const empty = join(s.dir, 'empty.tar.gz');
  (await import('node:fs')).writeFileSync(empty, '');
  assert.match((await refused(empty, 'ERR_ARCHIVE_CORRUPT')).message, /unexpected end of file/);
  assert.match(
    (await refused(s.archive(Buffer.alloc(0)), 'ERR_ARCHIVE_CORRUPT')).message,
    /Unrecognized archive format/,
  );
  await refused(s.dir, 'ERR_ARCHIVE_NOT_FOUND');
});
