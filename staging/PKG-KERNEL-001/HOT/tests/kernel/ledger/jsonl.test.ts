import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { rootPaths } from '../../../kernel/root/layout.js';
import { canonicalJson } from '../../../kernel/canonical.js';
import {
  exportLedger,
  exportRootCheckpoints,
  importLedger,
  Ledger,
  parseExport,
  verifyLedger,
  type LedgerEntry,
} from '../../../kernel/ledger/index.js';
import { CpError } from '../../../kernel/errors.js';
import { appendN, tempDir, tempLedger } from './helpers.js';

function exported(
  t: { after: (fn: () => void) => void },
  n = 6,
): { dir: string; file: string; entries: LedgerEntry[]; lines: string[] } {
  const ledger = tempLedger(t);
  const entries = appendN(ledger, n, (i) => ({ session_id: `S${i % 2}`, text: `line\n${i} "quoted" é` }));
  const dir = tempDir(t);
  const file = join(dir, 'ledger.jsonl');
  assert.deepEqual(exportLedger(ledger, file), ledger.head());
  return { dir, file, entries, lines: readFileSync(file, 'utf8').split('\n').slice(0, -1) };
}

function freshLedger(t: { after: (fn: () => void) => void }): Ledger {
  const ledger = Ledger.open(join(tempDir(t), 'imported.sqlite'), { create: true });
  t.after(() => {
    ledger.close();
  });
  return ledger;
}

test('export writes one canonical entry per line in chain order, atomically', (t) => {
  const { dir, lines, entries } = exported(t);
  assert.deepEqual(
    lines,
    entries.map((e) => canonicalJson(e)),
  );
  assert.deepEqual(readdirSync(dir), ['ledger.jsonl'], 'no temp file left behind');
});

test('a ledger and its export are readable by their owner alone: directory 0700, database, -wal, -shm and export 0600', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'made', 'for', 'it', 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  t.after(() => ledger.close());
  appendN(ledger, 3);
  for (const made of ['made', 'made/for', 'made/for/it'])
    assert.equal(statSync(join(dir, made)).mode & 0o777, 0o700, made);
  for (const name of ['ledger.sqlite', 'ledger.sqlite-wal', 'ledger.sqlite-shm'])
    assert.equal(statSync(join(dirname(path), name)).mode & 0o777, 0o600, name);
  const out = join(dir, 'export.jsonl');
  exportLedger(ledger, out);
  assert.equal(statSync(out).mode & 0o777, 0o600);
  // A directory the operator made keeps its mode: only the files cplane creates in it are made private.
  const shared = join(dir, 'shared');
  mkdirSync(shared, { mode: 0o755 });
  chmodSync(shared, 0o755);
  const second = Ledger.open(join(shared, 'l.sqlite'), { create: true });
  second.close();
  assert.equal(statSync(shared).mode & 0o777, 0o755);
  assert.equal(statSync(join(shared, 'l.sqlite')).mode & 0o777, 0o600);
  // An in-memory ledger (the G7 smoke's scratch) is no file: none is made in the working directory for it.
  const cwd = process.cwd();
  process.chdir(shared);
  try {
    Ledger.open(':memory:', { create: true }).close();
  } finally {
    process.chdir(cwd);
  }
  assert.deepEqual(readdirSync(shared), ['l.sqlite']);
});

test('import re-verifies and reproduces the same chain', (t) => {
  const { file, entries } = exported(t);
  const target = freshLedger(t);
  const head = importLedger(target, file);
  assert.deepEqual(head, { seq: entries.length, hash: entries.at(-1)?.entry_hash });
  assert.deepEqual(target.query({ order: 'oldest' }), entries);
  assert.equal(verifyLedger(target, { anchor: head }).ok, true);
  assert.equal(target.query({ session_id: 'S1' }).length, 3, 'imported rows are indexed like appended ones');
});

const TAMPERS: [string, (lines: string[]) => string[], string, RegExp][] = [
  [
    'an edited value',
    (l) => l.map((line, i) => (i === 2 ? line.replace('entry 2', 'entry X') : line)),
    'ERR_LEDGER_IMPORT_TAMPERED',
    /line 3 .*edited/,
  ],
  ['a deleted line', (l) => l.filter((_, i) => i !== 1), 'ERR_LEDGER_IMPORT_TAMPERED', /line 2 .*does not link/],
  [
    'two lines swapped',
    (l) => [l[0], l[2], l[1], ...l.slice(3)] as string[],
    'ERR_LEDGER_IMPORT_TAMPERED',
    /line 2 .*does not link/,
  ],
  [
    'a repeated line',
    (l) => [...l.slice(0, 3), l[2] as string],
    'ERR_LEDGER_IMPORT_TAMPERED',
    /line 4 .*repeats an id/,
  ],
  [
    'a line that is not JSON',
    (l) => [l[0] as string, '{oops', ...l.slice(1)],
    'ERR_LEDGER_IMPORT_INVALID',
    /line 2 .*not JSON/,
  ],
  [
    'an extra field',
    (l) => l.map((line, i) => (i === 0 ? line.replace('{', '{"admin":true,') : line)),
    'ERR_LEDGER_IMPORT_INVALID',
    /line 1 .*additional properties/,
  ],
  [
    'a malformed id',
    (l) => l.map((line, i) => (i === 0 ? line.replace(/"id":"LED-[0-9a-f]{8}"/, '"id":"LED-XYZ"') : line)),
    'ERR_LEDGER_IMPORT_INVALID',
    /line 1 .*\/id/,
  ],
];

for (const [name, edit, code, message] of TAMPERS) {
  test(`import refuses ${name} and imports nothing`, (t) => {
    const { file, lines } = exported(t);
    writeFileSync(file, `${edit(lines).join('\n')}\n`);
    const target = freshLedger(t);
    assert.throws(
      () => importLedger(target, file),
      (error: { code?: string; message?: string }) => error.code === code && message.test(error.message ?? ''),
    );
    assert.equal(target.count(), 0);
  });
}

test('import checks a truncated export against an anchor', (t) => {
  const { file, lines, entries } = exported(t);
  const anchor = { seq: entries.length, hash: entries.at(-1)?.entry_hash as string };
  writeFileSync(file, `${lines.slice(0, -2).join('\n')}\n`);
  assert.throws(() => parseExport(readFileSync(file, 'utf8'), { anchor }), { code: 'ERR_LEDGER_IMPORT_TAMPERED' });
  assert.equal(
    parseExport(readFileSync(file, 'utf8'), { anchor: { seq: 2, hash: entries[1]?.entry_hash as string } }).length,
    entries.length - 2,
  );
});

test('import into a non-empty ledger is refused and changes nothing', (t) => {
  const { file } = exported(t);
  const target = freshLedger(t);
  const own = target.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'mine' });
  assert.throws(() => importLedger(target, file), { code: 'ERR_LEDGER_IMPORT_NOT_EMPTY' });
  assert.deepEqual(target.head(), { seq: 1, hash: own.entry_hash });
});

test('an empty export imports as an empty ledger; a missing file is refused', (t) => {
  const ledger = tempLedger(t);
  const file = join(tempDir(t), 'empty.jsonl');
  exportLedger(ledger, file);
  assert.equal(readFileSync(file, 'utf8'), '');
  assert.deepEqual(importLedger(freshLedger(t), file).seq, 0);
  assert.throws(() => importLedger(freshLedger(t), `${file}.missing`), { code: 'ERR_LEDGER_IMPORT_INVALID' });
  assert.equal(existsSync(`${file}.missing`), false);
});

/** Metadata nested `depth` levels: {"a":{"a":…1…}}. Built in a loop, as JSON.parse would build it. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < depth; i += 1) value = { a: value };
  return value;
}

test('JSON nested past what SQLite stores is refused, coded, on append and on import; the deepest stored entry round-trips', (t) => {
  const ledger = tempLedger(t);
  const deepest = ledger.append({
    event_type: 'TEST',
    submission_id: 'S',
    decision: 'OK',
    reason: 'r',
    metadata: nested(1000),
  });
  for (const depth of [1001, 200_000])
    assert.throws(
      () =>
        ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r', metadata: nested(depth) }),
      (e: unknown) =>
        e instanceof CpError && e.code === 'ERR_LEDGER_ENTRY_INVALID' && /nested too deeply/.test(e.message),
      `metadata ${depth} levels deep`,
    );
  assert.equal(ledger.count(), 1, 'nothing written by the refused appends');
  const file = join(tempDir(t), 'deep.jsonl');
  exportLedger(ledger, file);
  const line = readFileSync(file, 'utf8').trimEnd();
  assert.deepEqual(importLedger(freshLedger(t), file), { seq: 1, hash: deepest.entry_hash });
  // The same entry, its metadata a few hundred thousand levels deeper: refused before any recursive walk.
  const bottom = '{"a":1}';
  writeFileSync(file, `${line.replace(bottom, `${'{"a":'.repeat(300_000)}${bottom}${'}'.repeat(300_000)}`)}\n`);
  const target = freshLedger(t);
  assert.throws(
    () => importLedger(target, file),
    (e: unknown) =>
      e instanceof CpError && e.code === 'ERR_LEDGER_IMPORT_INVALID' && /line 1 .*deeper than/.test(e.message),
  );
  assert.equal(target.count(), 0);
});

test('an export or checkpoints copy written over the ledger file or its -wal/-shm is refused, and the ledger stays whole', (t) => {
  const root = tempDir(t);
  const path = rootPaths(root).ledgerFile;
  const ledger = Ledger.open(path, { create: true });
  t.after(() => ledger.close());
  appendN(ledger, 4);
  const head = ledger.head();
  // The same file reached through a symlinked directory is the same file.
  const alias = join(tempDir(t), 'alias');
  symlinkSync(dirname(path), alias);
  for (const out of [path, `${path}-wal`, `${path}-shm`, join(alias, basename(path))]) {
    assert.throws(
      () => exportLedger(ledger, out),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_USAGE' && /would replace the ledger/.test(e.message),
      out,
    );
    assert.throws(() => exportRootCheckpoints(root, out), { code: 'ERR_USAGE' });
  }
  const other = join(tempDir(t), 'copy.jsonl');
  assert.deepEqual(exportLedger(ledger, other), head);
  ledger.close();
  const reopened = Ledger.open(path, { readonly: true });
  t.after(() => reopened.close());
  assert.equal(verifyLedger(reopened, { anchor: head }).ok, true);
});

test('an export line that holds a key twice is refused, however it is spelt; one merely reformatted still imports', (t) => {
  const { file, lines, entries } = exported(t, 3);
  const repeats: [string, (line: string) => string][] = [
    ['decision', (line) => line.replace('{"decision":"OK"', '{"decision":"DENIED","decision":"OK"')],
    ['decision', (line) => line.replace('{"decision":"OK"', '{"\\u0064ecision":"DENIED","decision":"OK"')],
    ['session_id', (line) => line.replace('"metadata":{', '"metadata":{"session_id":"S9",')],
  ];
  for (const [key, edit] of repeats) {
    const edited = edit(lines[1] as string);
    assert.notEqual(edited, lines[1]);
    writeFileSync(file, `${[lines[0], edited, lines[2]].join('\n')}\n`);
    const target = freshLedger(t);
    assert.throws(
      () => importLedger(target, file),
      (e: unknown) =>
        e instanceof CpError &&
        e.code === 'ERR_LEDGER_IMPORT_INVALID' &&
        e.message.includes(`line 2 `) &&
        e.message.includes(`"${key}" twice`),
      edited,
    );
    assert.equal(target.count(), 0);
  }
  // Keys in another order and a key's text inside a value are no repeat: the chain verifies as it did.
  const reordered = lines.map((line) => {
    const entry = JSON.parse(line) as Record<string, unknown>;
    return JSON.stringify(Object.fromEntries(Object.entries(entry).reverse()));
  });
  assert.notEqual(reordered[0], lines[0]);
  assert.ok((lines[0] as string).includes('"text":"line\\n0 \\"quoted\\" é"'));
  writeFileSync(file, `${reordered.join('\n')}\n`);
  assert.deepEqual(importLedger(freshLedger(t), file), {
    seq: entries.length,
    hash: entries.at(-1)?.entry_hash as string,
  });
});
