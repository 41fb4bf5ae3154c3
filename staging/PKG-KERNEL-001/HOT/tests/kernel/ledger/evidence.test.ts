import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cli } from '../../cli/run-cli.js';
import { Ledger, verifyLedger } from '../../../kernel/ledger/index.js';
import { tempDir, tempLedger, appendN } from './helpers.js';

/** A ledger with a few entries, closed (so no -wal beside it), and its path. */
function closedLedger(t: { after: (fn: () => void) => void }, n = 5): string {
  const ledger = tempLedger(t);
  appendN(ledger, n);
  ledger.close();
  return ledger.path;
}

function raw(path: string, sql: string): void {
  const db = new Database(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

const APPEND = ['--event-type', 'TEST', '--submission-id', 'S', '--decision', 'OK', '--reason', 'r'];
const READ_COMMANDS = [['verify'], ['head'], ['query'], ['tail'], ['export'], ['orphans']];

// --- the schema is part of the evidence -------------------------------------------------------------

const SCHEMA_ATTACKS: Array<[string, string, string]> = [
  ['a dropped append-only trigger', 'DROP TRIGGER entries_no_update', 'missing'],
  [
    'a trigger rewritten to do nothing',
    'DROP TRIGGER entries_no_delete; CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT 1; END',
    'altered',
  ],
  ['an index redefined', 'DROP INDEX entries_session; CREATE INDEX entries_session ON entries (session_id)', 'altered'],
  [
    'an extra trigger that could rewrite',
    "CREATE TRIGGER sneaky AFTER INSERT ON entries BEGIN INSERT INTO ledger_meta VALUES ('x' || NEW.seq, 'y'); END",
    'extra',
  ],
  ['an extra view', 'CREATE VIEW v AS SELECT * FROM entries', 'extra'],
  ['a dropped index', 'DROP INDEX entries_rare_kind', 'missing'],
];

for (const [what, sql, kind] of SCHEMA_ATTACKS) {
  test(`schema: ${what} is reported by verify and refused by append (chain still intact)`, async (t) => {
    const path = closedLedger(t);
    raw(path, sql);
    const ledger = Ledger.open(path);
    t.after(() => ledger.close());
    const result = verifyLedger(ledger);
    assert.equal(result.ok, false);
    assert.equal(result.first_bad, undefined, 'the chain itself verifies');
    assert.ok(
      result.schema_problems?.some((p) => p.kind === kind),
      JSON.stringify(result.schema_problems),
    );
    assert.throws(() => ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' }), {
      code: 'ERR_LEDGER_SCHEMA_ALTERED',
    });
    assert.equal(ledger.count(), 5, 'nothing appended');
    ledger.close();
    const verify = await cli('ledger', 'verify', '--ledger', path);
    assert.equal(verify.code, 1);
    assert.match(verify.out, new RegExp(`schema ${kind.toUpperCase()}`));
    const append = await cli('ledger', 'append', '--ledger', path, ...APPEND);
    assert.equal(append.code, 3);
    assert.match(append.err, /ERR_LEDGER_SCHEMA_ALTERED/);
  });
}

test('schema: an altered schema is caught by a writer that opened before the change', (t) => {
  const ledger = tempLedger(t);
  appendN(ledger, 2);
  raw(ledger.path, 'DROP TRIGGER entries_no_delete');
  assert.throws(() => appendN(ledger, 1), { code: 'ERR_LEDGER_SCHEMA_ALTERED' });
  assert.equal(ledger.count(), 2);
});

test('schema: an intact ledger, one with the optional timestamp index and one after ANALYZE verify and take appends', (t) => {
  const path = closedLedger(t);
  raw(path, 'CREATE INDEX entries_timestamp ON entries (timestamp, seq); ANALYZE');
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  assert.deepEqual(ledger.schemaProblems, []);
  appendN(ledger, 2);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('schema: a changed format version is refused by verify and append', async (t) => {
  const path = closedLedger(t);
  raw(path, "UPDATE ledger_meta SET value = '99' WHERE key = 'format_version'");
  for (const argv of [['verify'], ['append', ...APPEND]]) {
    const run = await cli('ledger', ...(argv as [string, ...string[]]), '--ledger', path);
    assert.equal(run.code, 3);
    assert.match(run.err, /ERR_LEDGER_FORMAT_VERSION/);
  }
});

// --- read-only commands never write -------------------------------------------------------------------

interface Snapshot {
  bytes: Buffer;
  mtimeMs: number;
  siblings: string[];
}

function snapshot(path: string): Snapshot {
  const dir = join(path, '..');
  return { bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs, siblings: readdirSync(dir).sort() };
}

async function assertReadOnlyRefusal(path: string, code: string): Promise<void> {
  const before = snapshot(path);
  for (const argv of READ_COMMANDS) {
    const run = await cli('ledger', ...(argv as [string]), '--ledger', path);
    assert.equal(run.code, 3, `${argv[0]}: ${run.out}${run.err}`);
    assert.match(run.err, new RegExp(code), `${argv[0]}: ${run.err}`);
    const after = snapshot(path);
    assert.ok(after.bytes.equals(before.bytes), `${argv[0]} changed the file`);
    assert.equal(after.mtimeMs, before.mtimeMs, `${argv[0]} touched the file`);
    assert.deepEqual(after.siblings, before.siblings, `${argv[0]} created files beside it`);
  }
}

test('read-only commands on an empty file: coded error, file untouched, nothing created beside it', async (t) => {
  const path = join(tempDir(t), 'empty.sqlite');
  writeFileSync(path, '');
  await assertReadOnlyRefusal(path, 'ERR_LEDGER_NOT_A_LEDGER');
});

test('read-only commands on random bytes: coded error, file untouched', async (t) => {
  const path = join(tempDir(t), 'random.sqlite');
  writeFileSync(path, Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919 + 13) % 256)));
  await assertReadOnlyRefusal(path, 'ERR_LEDGER_NOT_A_LEDGER');
});

for (const mode of ['DELETE', 'WAL']) {
  test(`read-only commands on another program's SQLite database (${mode} journal): coded error, no -wal/-shm created`, async (t) => {
    const path = join(tempDir(t), 'other.db');
    raw(path, `PRAGMA journal_mode = ${mode}; CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me')`);
    assert.equal(existsSync(`${path}-wal`), false);
    await assertReadOnlyRefusal(path, 'ERR_LEDGER_NOT_A_LEDGER');
    // Writers are refused the same way, before SQLite opens the file.
    const before = snapshot(path);
    const append = await cli('ledger', 'append', '--ledger', path, ...APPEND);
    assert.match(append.err, /ERR_LEDGER_NOT_A_LEDGER/);
    assert.deepEqual(snapshot(path), before);
  });
}

test('read-only commands on an empty SQLite database (a header and no tables) refuse it instead of laying out a ledger', async (t) => {
  const path = join(tempDir(t), 'blank.db');
  raw(path, 'PRAGMA journal_mode = WAL; PRAGMA user_version = 1');
  await assertReadOnlyRefusal(path, 'ERR_LEDGER_NOT_A_LEDGER');
});

test('a truncated ledger is a damaged ledger for every command, and nothing appends to it', async (t) => {
  const path = closedLedger(t, 200);
  const size = statSync(path).size;
  truncateSync(path, size - 2048 - 100);
  await assertReadOnlyRefusal(path, 'ERR_LEDGER_DAMAGED');
  truncateSync(path, Math.floor(size / 2 / 2048) * 2048);
  await assertReadOnlyRefusal(path, 'ERR_LEDGER_DAMAGED');
  const before = snapshot(path);
  const append = await cli('ledger', 'append', '--ledger', path, ...APPEND);
  assert.equal(append.code, 3);
  assert.match(append.err, /ERR_LEDGER_DAMAGED/);
  assert.deepEqual(snapshot(path), before);
});

test('a ledger with flipped bytes in its pages is a coded error (damaged or a broken chain) or still intact, never ERR_INTERNAL', async (t) => {
  const pristine = readFileSync(closedLedger(t, 300));
  const pages = pristine.length / 2048;
  const dir = tempDir(t);
  let damagedSeen = 0;
  // Each page of a small ledger in turn: damage anywhere stops appends, not only on the pages an append touches.
  for (let page = 1; page < pages; page += 1) {
    const path = join(dir, `flip-${page}.sqlite`);
    const bytes = Buffer.from(pristine);
    for (let i = 0; i < 64; i += 1) {
      const at = page * 2048 + 8 + i * 31;
      bytes[at] = (bytes[at] as number) ^ 0xa5;
    }
    writeFileSync(path, bytes);
    const verify = await cli('ledger', 'verify', '--ledger', path);
    // A flip in a page's free space changes nothing SQLite or the chain reads: that ledger is still intact.
    assert.ok(
      verify.code === 0 ||
        verify.code === 1 ||
        (verify.code === 3 && /ERR_LEDGER_(DAMAGED|NOT_A_LEDGER)/.test(verify.err)),
      `page ${page}: ${verify.code} ${verify.err}${verify.out}`,
    );
    if (/ERR_LEDGER_DAMAGED/.test(verify.err)) damagedSeen += 1;
    const before = readFileSync(path);
    const append = await cli('ledger', 'append', '--ledger', path, ...APPEND);
    assert.notEqual(append.code, 70, `page ${page}: append crashed: ${append.err}`);
    if (verify.code === 3) {
      assert.equal(append.code, 3, `page ${page}: appended to a ledger verify calls damaged`);
      assert.ok(readFileSync(path).equals(before), `page ${page}: the refused append wrote`);
    }
  }
  assert.ok(damagedSeen > 0, 'some flips damage the b-tree itself');
});

test('read-only commands on a real ledger leave its bytes as they were', async (t) => {
  const path = closedLedger(t);
  const before = readFileSync(path);
  for (const argv of READ_COMMANDS) {
    const run = await cli('ledger', ...(argv as [string]), '--ledger', path);
    assert.equal(run.code, 0, `${argv[0]}: ${run.err}`);
  }
  assert.ok(readFileSync(path).equals(before));
});

test('a foreign database with a stray -wal beside it is refused by append before its journal mode is touched', async (t) => {
  const path = join(tempDir(t), 'other.db');
  raw(path, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me')");
  writeFileSync(`${path}-wal`, '');
  const before = readFileSync(path);
  const append = await cli('ledger', 'append', '--ledger', path, ...APPEND);
  assert.equal(append.code, 3);
  assert.match(append.err, /ERR_LEDGER_NOT_A_LEDGER/);
  assert.ok(readFileSync(path).equals(before), 'still a rollback-journal database, unchanged');
});

test("a FIFO in the ledger's place is refused at once, never opened for a blocking read", async (t) => {
  const path = join(tempDir(t), 'fifo.sqlite');
  const made = spawnSync('mkfifo', [path]);
  if (made.status !== 0) return t.skip('mkfifo is not available');
  for (const argv of [['verify'], ['append', ...APPEND]]) {
    const run = await cli('ledger', ...(argv as [string]), '--ledger', path);
    assert.equal(run.code, 3, argv[0]);
    assert.match(run.err, /ERR_LEDGER_OPEN_FAILED.*not a regular file/, argv[0]);
  }
});
