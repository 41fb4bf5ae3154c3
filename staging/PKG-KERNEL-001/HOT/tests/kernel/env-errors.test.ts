// Environmental faults map to their own codes (never ERR_INTERNAL); whole-file reads are bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envError, withEnvErrors } from '../../kernel/env-errors.js';
import { READ_LIMITS, readFileBounded, readTextBounded } from '../../kernel/bounded-read.js';
import { readLinesBounded } from '../../kernel/line-reader.js';
import { toCpError } from '../../kernel/errors.js';
import { writeFileAtomic } from '../../kernel/atomic.js';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-env-errors-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const errno = (code: string, path?: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: boom`), { code, ...(path ? { path } : {}) });

test('each environmental errno and SQLite code maps to its code, with the path and a hint', () => {
  const cases: Array<[string, string]> = [
    ['ENOSPC', 'ERR_DISK_FULL'],
    ['EDQUOT', 'ERR_DISK_FULL'],
    ['SQLITE_FULL', 'ERR_DISK_FULL'],
    ['SQLITE_IOERR_SHMSIZE', 'ERR_DISK_FULL'],
    ['ENAMETOOLONG', 'ERR_NAME_TOO_LONG'],
    ['EROFS', 'ERR_FS_READONLY'],
    ['SQLITE_READONLY', 'ERR_FS_READONLY'],
    ['EACCES', 'ERR_PERMISSION'],
    ['EPERM', 'ERR_PERMISSION'],
    ['EIO', 'ERR_IO'],
    ['SQLITE_IOERR_WRITE', 'ERR_IO'],
    ['EMFILE', 'ERR_IO'],
    ['SQLITE_CORRUPT', 'ERR_DB_DAMAGED'],
    ['SQLITE_CORRUPT_INDEX', 'ERR_DB_DAMAGED'],
    ['SQLITE_NOTADB', 'ERR_DB_DAMAGED'],
  ];
  for (const [code, expected] of cases) {
    const mapped = envError(errno(code), '/r/HOT/x', 'writing');
    assert.equal(mapped?.code, expected, code);
    assert.match(mapped.message, /\/r\/HOT\/x/);
    assert.ok(mapped.hint.length > 0);
    assert.equal(mapped.details.errno, code);
  }
});

test('a bug stays a bug: ordinary errors, ENOENT and odd values are not environmental', () => {
  for (const value of [
    new TypeError('x is undefined'),
    errno('ENOENT'),
    errno('EEXIST'),
    errno('SQLITE_CONSTRAINT'),
    errno('__proto__'),
    errno('toString'),
    null,
    'ENOSPC',
    42,
  ]) {
    assert.equal(envError(value), null, String(value));
  }
  assert.equal(toCpError(new TypeError('x')).code, 'ERR_INTERNAL');
  assert.equal(toCpError(errno('ENOSPC')).code, 'ERR_DISK_FULL', 'toCpError does not call a full disk a bug');
  assert.equal(
    envError(new Error('wrapped', { cause: errno('ENOSPC', '/p') }))?.code,
    'ERR_DISK_FULL',
    'found one level down',
  );
  assert.throws(
    () =>
      withEnvErrors('/p', 'x', () => {
        throw new RangeError('bug');
      }),
    RangeError,
  );
});

test('a real damaged SQLite file and a real over-long name are mapped', (t) => {
  const dir = tempDir(t);
  const junk = join(dir, 'junk.sqlite');
  writeFileSync(junk, Buffer.alloc(8192, 0x41));
  assert.throws(() => withEnvErrors(junk, 'opening', () => new Database(junk).pragma('journal_mode = WAL')), {
    code: 'ERR_DB_DAMAGED',
  });
  assert.throws(() => writeFileAtomic(join(dir, 'n'.repeat(300)), 'x'), { code: 'ERR_NAME_TOO_LONG' });
});

test('readFileBounded reads honest files and refuses a sparse 5 GiB file before reading it', (t) => {
  const dir = tempDir(t);
  const small = join(dir, 'small.json');
  writeFileSync(small, '{"a":1}');
  assert.equal(readTextBounded(small, { maxBytes: 100, what: 'a config' }), '{"a":1}');
  const exact = join(dir, 'exact');
  writeFileSync(exact, Buffer.alloc(100, 1));
  assert.equal(readFileBounded(exact, { maxBytes: 100, what: 'x' }).length, 100);
  assert.throws(() => readFileBounded(exact, { maxBytes: 99, what: 'x' }), { code: 'ERR_INPUT_TOO_LARGE' });
  const huge = join(dir, 'huge');
  execFileSync('truncate', ['-s', '5G', huge]);
  const before = process.memoryUsage().rss;
  assert.throws(
    () => readFileBounded(huge, { maxBytes: READ_LIMITS.promptSpec, what: 'the prompt spec' }),
    (error: { code: string; details: { size_bytes: number } }) => {
      assert.equal(error.code, 'ERR_INPUT_TOO_LARGE');
      assert.equal(error.details.size_bytes, 5 * 1024 ** 3);
      return true;
    },
  );
  assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'nothing close to the file was read');
});

test('readTextBounded refuses bytes that are not UTF-8 (Latin-1, a lone surrogate, a cut sequence) and keeps valid text', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bounded-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bad: Array<[string, Buffer]> = [
    ['latin1', Buffer.from('{"k":"caf\u00e9"}', 'latin1')],
    ['surrogate', Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])],
    ['cut', Buffer.from([0x22, 0xe2, 0x82, 0x22])],
    ['overlong', Buffer.from([0x22, 0xc0, 0xaf, 0x22])],
  ];
  for (const [name, bytes] of bad) {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    assert.throws(
      () => readTextBounded(path, { maxBytes: 100, what: 'the router config' }),
      (error: { code: string; message: string; details: Record<string, unknown> }) =>
        error.code === 'ERR_INPUT_NOT_UTF8' &&
        error.message.includes('the router config') &&
        error.details.path === path &&
        error.details.size_bytes === bytes.length,
      name,
    );
  }
  const good = join(dir, 'good');
  writeFileSync(good, '{"k":"café 🙂"}');
  assert.equal(readTextBounded(good, { maxBytes: 100, what: 'x' }), '{"k":"café 🙂"}');
});

test('readFileBounded stops at the limit when the size lies (a character device), and codes unreadable paths', (t) => {
  const dir = tempDir(t);
  assert.throws(() => readFileBounded('/dev/zero', { maxBytes: 4096, what: 'the key' }), {
    code: 'ERR_INPUT_TOO_LARGE',
  });
  assert.throws(
    () => readFileBounded(join(dir, 'missing'), { maxBytes: 10, what: 'the key', unreadableCode: 'ERR_KEY_INVALID' }),
    { code: 'ERR_KEY_INVALID' },
  );
  mkdirSync(join(dir, 'a-dir'));
  assert.throws(() => readFileBounded(join(dir, 'a-dir'), { maxBytes: 10, what: 'the key' }), {
    code: 'ERR_INPUT_UNREADABLE',
  });
  assert.throws(() => readFileBounded(join(dir, 'x'.repeat(300)), { maxBytes: 10, what: 'the key' }), {
    code: 'ERR_NAME_TOO_LONG',
  });
});

test('readLinesBounded streams lines across chunk boundaries (multi-byte text intact) and stops at an over-long line', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'lines.jsonl');
  const long = 'é'.repeat(700_000); // 1.4 MB: crosses the 1 MiB chunk boundary mid-character
  writeFileSync(path, `a\n${long}\n\nlast`);
  assert.deepEqual([...readLinesBounded(path, { maxLineBytes: 2_000_000, what: 'x' })], ['a', long, '', 'last']);
  assert.throws(
    () => [...readLinesBounded(path, { maxLineBytes: 1_000_000, what: 'x' })],
    (error: { code: string; details: { line: number } }) => {
      assert.equal(error.code, 'ERR_INPUT_TOO_LARGE');
      assert.equal(error.details.line, 2);
      return true;
    },
  );
  const sparse = join(dir, 'sparse');
  execFileSync('truncate', ['-s', '5G', sparse]);
  assert.throws(() => [...readLinesBounded(sparse, { maxLineBytes: 4 * 1024 * 1024, what: 'the export' })], {
    code: 'ERR_INPUT_TOO_LARGE',
  });
  assert.throws(
    () => [
      ...readLinesBounded(join(dir, 'missing'), {
        maxLineBytes: 10,
        what: 'x',
        unreadableCode: 'ERR_LEDGER_IMPORT_INVALID',
      }),
    ],
    { code: 'ERR_LEDGER_IMPORT_INVALID' },
  );
});
