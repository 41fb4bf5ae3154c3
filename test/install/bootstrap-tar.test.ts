// The CP_BOOTSTRAP entry's built-ins-only tar reader: path-safe even though its input is pinned by digest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { readTarGz } from '../../bootstrap/entry/tar.js';
import { paxEntry, rawTar, type RawEntry } from '../../staging/PKG-KERNEL-001/HOT/tests/archive/tar-fixture.js';

const gz = (entries: RawEntry[]): Buffer => gzipSync(rawTar(entries));

test('regular files come back with their paths, ./ prefixes dropped, directories and pax paths applied', () => {
  const files = readTarGz(gz([
    { name: './manifest.json', data: '{}' }, { name: 'HOT/', type: '5' },
    paxEntry({ path: 'HOT/a/very/long/path.js' }), { name: 'ignored-by-pax', data: 'long' },
  ]));
  assert.deepEqual(files.map((f) => [f.path, f.data.toString()]), [['manifest.json', '{}'], ['HOT/a/very/long/path.js', 'long']]);
});

test('unsafe paths, links, special files, duplicates and corrupt streams are refused with codes', () => {
  const cases: [string, RawEntry[], string][] = [
    ['dotdot', [{ name: 'HOT/../../x', data: 'x' }], 'ERR_ARCHIVE_UNSAFE_PATH'],
    ['absolute', [{ name: '/etc/x', data: 'x' }], 'ERR_ARCHIVE_UNSAFE_PATH'],
    ['pax escape', [paxEntry({ path: '../../escape' }), { name: 'fine', data: 'x' }], 'ERR_ARCHIVE_UNSAFE_PATH'],
    ['symlink', [{ name: 'HOT/l', type: '2', linkname: '/etc/passwd' }], 'ERR_ARCHIVE_LINK'],
    ['hard link', [{ name: 'HOT/h', type: '1', linkname: 'HOT/x' }], 'ERR_ARCHIVE_LINK'],
    ['fifo', [{ name: 'HOT/f', type: '6' }], 'ERR_ARCHIVE_SPECIAL_FILE'],
    ['duplicate', [{ name: 'HOT/x', data: '1' }, { name: './HOT/x', data: '2' }], 'ERR_ARCHIVE_DUPLICATE_MEMBER'],
    ['truncated', [{ name: 'HOT/x', data: 'abc', headerSize: 4096 }], 'ERR_ARCHIVE_CORRUPT'],
  ];
  for (const [name, entries, code] of cases) assert.throws(() => readTarGz(gz(entries)), { code }, name);
  assert.throws(() => readTarGz(Buffer.from('not gzip')), { code: 'ERR_ARCHIVE_CORRUPT' });
  const bad = rawTar([{ name: 'HOT/x', data: 'x' }]);
  bad.writeUInt8(bad.readUInt8(0) ^ 1, 0);
  assert.throws(() => readTarGz(gzipSync(bad)), { code: 'ERR_ARCHIVE_CORRUPT' });
});
