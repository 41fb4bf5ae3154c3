import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { packArchive, readPackageArchive, tarBytes } from '../../../kernel/archive/index.js';
import { splitUstarPath } from '../../../kernel/archive/ustar.js';
import { manifestFor, scratch, sri512 } from './tar-fixture.js';

const files = [
  { path: 'HOT/kernel/b.js', data: Buffer.from('export const b = 2;\n') },
  { path: 'HOT/scripts/run.js', data: Buffer.from('#!/usr/bin/env node\n') },
  { path: 'HOT/kernel/a.js', data: Buffer.from('export const a = 1;\n') },
];
const withManifest = [...files, { path: 'manifest.json', data: Buffer.from(JSON.stringify(manifestFor(files))) }];

test('packing the same files twice (in any order) gives byte-identical archives', async (t) => {
  const s = scratch(t);
  const one = await packArchive(withManifest, join(s.dir, 'one.tar.gz'));
  const two = await packArchive([...withManifest].reverse(), join(s.dir, 'two.tar.gz'));
  assert.deepEqual(readFileSync(join(s.dir, 'one.tar.gz')), readFileSync(join(s.dir, 'two.tar.gz')));
  assert.equal(one.integrity, two.integrity);
  assert.equal(one.integrity, sri512(readFileSync(join(s.dir, 'one.tar.gz'))));
  assert.equal(one.size, statSync(join(s.dir, 'one.tar.gz')).size);
});

test('the gzip header carries no time, no name and a fixed OS byte', async (t) => {
  const s = scratch(t);
  await packArchive(withManifest, join(s.dir, 'x.tar.gz'));
  const gz = readFileSync(join(s.dir, 'x.tar.gz'));
  assert.deepEqual([...gz.subarray(0, 4)], [0x1f, 0x8b, 8, 0]);
  assert.equal(gz.readUInt32LE(4), 0);
  assert.equal(gz[9], 0xff);
});

test('entries: top-level first then sorted, mtime 0, owner 0, empty owner names, modes 0644 / 0755 for scripts', async (t) => {
  const tar = tarBytes(withManifest);
  const names: string[] = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.subarray(0, 100).toString().replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString(), 8);
    names.push(name);
    assert.equal(header.subarray(136, 147).toString(), '00000000000');
    assert.equal(header.subarray(108, 115).toString(), '0000000');
    assert.equal(header.subarray(265, 297).readUInt8(0), 0);
    assert.equal(header.subarray(100, 107).toString(), name.startsWith('HOT/scripts/') ? '0000755' : '0000644');
    off += 512 + Math.ceil(size / 512) * 512;
  }
  assert.deepEqual(names, ['manifest.json', 'HOT/kernel/a.js', 'HOT/kernel/b.js', 'HOT/scripts/run.js']);
  const s = scratch(t);
  await packArchive(withManifest, join(s.dir, 'r.tar.gz'));
  const archive = await readPackageArchive(join(s.dir, 'r.tar.gz'));
  assert.deepEqual([...archive.files.keys()].sort(), files.map((f) => f.path).sort());
  assert.deepEqual(gunzipSync(readFileSync(join(s.dir, 'r.tar.gz'))), tar);
});

test('long paths use the ustar prefix field and read back intact', async (t) => {
  const long = `HOT/node_modules/${'deep/'.repeat(25)}file-with-a-long-name.js`;
  assert.ok(long.length > 100);
  const split = splitUstarPath(long);
  assert.equal(`${split.prefix}/${split.name}`, long);
  const longFiles = [{ path: long, data: Buffer.from('x') }];
  const s = scratch(t);
  await packArchive(
    [...longFiles, { path: 'manifest.json', data: Buffer.from(JSON.stringify(manifestFor(longFiles))) }],
    join(s.dir, 'l.tar.gz'),
  );
  const archive = await readPackageArchive(join(s.dir, 'l.tar.gz'));
  assert.equal(archive.files.get(long)?.toString(), 'x');
  assert.throws(() => splitUstarPath(`HOT/${'x'.repeat(120)}`), { code: 'ERR_ARCHIVE_PATH_TOO_LONG' });
});

test('the packer refuses unsafe and duplicate paths', async (t) => {
  const s = scratch(t);
  await assert.rejects(packArchive([{ path: '../x', data: Buffer.from('') }], join(s.dir, 'u.tar.gz')), {
    code: 'ERR_ARCHIVE_UNSAFE_PATH',
  });
  await assert.rejects(packArchive([...files, ...files], join(s.dir, 'd.tar.gz')), {
    code: 'ERR_ARCHIVE_DUPLICATE_MEMBER',
  });
});
