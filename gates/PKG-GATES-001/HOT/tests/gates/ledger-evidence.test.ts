// The ledger's evidence on a freshly installed, signed root (signed-root.ts): its schema, its dates and its bytes.
// Each attack must make G4 (or G6) FAIL and the ledger commands refuse with a coded error, and the untouched root
// must pass.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Ledger } from '#kernel/ledger/index.js';
import {
  cplaneOf,
  gateCheck as gateCheckRun,
  type GateJson,
  makeSignedRoot,
  must,
  rootCopies,
  run,
} from './signed-root.js';
import { rootPaths } from '#kernel/root/layout.js';

const work = mkdtempSync(join(tmpdir(), 'cp-ledger-gates-'));
const pristine = join(work, 'pristine');
const copyRoot = rootCopies(work, pristine);

before(() => makeSignedRoot(work, pristine));
after(() => rmSync(work, { recursive: true, force: true }));

const gateCheck = (root: string): GateJson => gateCheckRun(root).json;

function gate(json: GateJson, id: string): { status: string; codes: string[] } {
  const g = json.gates.find((x) => x.id === id);
  return { status: g?.status ?? 'missing', codes: g?.findings.map((f) => f.code) ?? [] };
}

const ledgerOf = (root: string): string => rootPaths(root).ledgerFile;
const APPEND = ['--event-type', 'DISPATCH', '--submission-id', 'PRC-X', '--decision', 'DISPATCHED', '--reason', 'x'];

function sqlite(path: string, sql: string): void {
  const db = new Database(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

test('positive: the bootstrapped root passes G4 and G6, and read-only ledger commands leave its ledger byte-identical', () => {
  const root = copyRoot();
  const json = gateCheck(root);
  assert.equal(gate(json, 'G4').status, 'PASS', JSON.stringify(json.gates));
  assert.equal(gate(json, 'G6').status, 'PASS');
  const before = readFileSync(ledgerOf(root));
  for (const command of ['verify', 'head', 'query', 'tail', 'export'])
    assert.equal(run([cplaneOf(root), 'ledger', command, '--root', root]).status, 0, command);
  assert.ok(readFileSync(ledgerOf(root)).equals(before));
});

test('schema: a dropped append-only trigger FAILS G4 and verify, and appends are refused', () => {
  const root = copyRoot();
  sqlite(ledgerOf(root), 'DROP TRIGGER entries_no_update');
  const json = gateCheck(root);
  assert.equal(gate(json, 'G4').status, 'FAIL');
  assert.deepEqual(gate(json, 'G4').codes, ['LEDGER_SCHEMA_MISSING']);
  const verify = run([cplaneOf(root), 'ledger', 'verify', '--root', root]);
  assert.equal(verify.status, 1);
  assert.match(verify.stdout, /schema MISSING: trigger entries_no_update/);
  const append = run([cplaneOf(root), 'ledger', 'append', '--root', root, ...APPEND]);
  assert.equal(append.status, 3);
  assert.match(append.stderr, /ERR_LEDGER_SCHEMA_ALTERED/);
});

test('clock skew: a future-dated DISPATCH FAILS G4 and G6 instead of hiding as in flight; later appends keep real time', () => {
  const root = copyRoot();
  const future = Date.now() + 6 * 3_600_000;
  // A writer whose clock runs six hours ahead and that was allowed a day of skew.
  const fast = Ledger.open(ledgerOf(root), { maxClockSkewMs: 24 * 3_600_000, clock: () => future });
  const dispatch = fast.append({
    event_type: 'DISPATCH',
    submission_id: 'PRC-X',
    decision: 'DISPATCHED',
    reason: 'x',
    metadata: { session_id: 'S' },
  });
  fast.close();
  const json = gateCheck(root);
  assert.equal(gate(json, 'G4').status, 'FAIL');
  assert.deepEqual(gate(json, 'G4').codes, ['LEDGER_FUTURE_DATED']);
  assert.equal(gate(json, 'G6').status, 'FAIL');
  assert.deepEqual(gate(json, 'G6').codes, ['FUTURE_DATED_DISPATCH']);
  const appended = JSON.parse(must([cplaneOf(root), 'ledger', 'append', '--root', root, ...APPEND, '--json'])) as {
    timestamp: string;
  };
  assert.ok(
    Date.parse(appended.timestamp) < Date.parse(dispatch.timestamp),
    `${appended.timestamp} was dragged to ${dispatch.timestamp}`,
  );
  assert.ok(Math.abs(Date.parse(appended.timestamp) - Date.now()) < 3_600_000);
  assert.equal(run([cplaneOf(root), 'ledger', 'verify', '--root', root]).status, 0);
});

test('damage: flipped bytes in a ledger page are ERR_LEDGER_DAMAGED for verify and G4, and nothing appends to it', () => {
  const root = copyRoot();
  const path = ledgerOf(root);
  const bytes = readFileSync(path);
  const pages = bytes.length / 2048;
  // The entries table's root page and the first pages after the schema: b-tree structure, not free space.
  for (let page = 2; page < Math.min(pages, 12); page += 1)
    for (let i = 0; i < 40; i += 1) {
      const at = page * 2048 + 4 + i * 13;
      bytes[at] = (bytes[at] as number) ^ 0x5a;
    }
  writeFileSync(path, bytes);
  const before = { bytes: readFileSync(path), mtime: statSync(path).mtimeMs };
  const verify = run([cplaneOf(root), 'ledger', 'verify', '--root', root]);
  assert.equal(verify.status, 3, verify.stdout + verify.stderr);
  assert.match(verify.stderr, /ERR_LEDGER_(DAMAGED|NOT_A_LEDGER)/);
  const json = gateCheck(root);
  assert.equal(gate(json, 'G4').status, 'FAIL');
  assert.ok(
    gate(json, 'G4').codes.some((c) => /^ERR_LEDGER_(DAMAGED|NOT_A_LEDGER)$/.test(c)),
    gate(json, 'G4').codes.join(),
  );
  const append = run([cplaneOf(root), 'ledger', 'append', '--root', root, ...APPEND]);
  assert.equal(append.status, 3);
  assert.doesNotMatch(append.stderr, /ERR_INTERNAL/);
  assert.ok(readFileSync(path).equals(before.bytes));
  assert.equal(statSync(path).mtimeMs, before.mtime);
});

test("not a ledger: another program's WAL database in the ledger's place is refused by every read-only command, untouched", () => {
  const root = copyRoot();
  const path = ledgerOf(root);
  rmSync(path);
  sqlite(path, "PRAGMA journal_mode = WAL; CREATE TABLE accounts (name TEXT); INSERT INTO accounts VALUES ('alice')");
  const before = {
    bytes: readFileSync(path),
    mtime: statSync(path).mtimeMs,
    siblings: readdirSync(rootPaths(root).ledgerDir).sort(),
  };
  for (const argv of [
    ['ledger', 'verify'],
    ['ledger', 'head'],
    ['ledger', 'query'],
    ['ledger', 'tail'],
    ['ledger', 'export'],
    ['verify'],
  ]) {
    const r = run([cplaneOf(root), ...argv, '--root', root]);
    assert.equal(r.status, 3, `${argv.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /ERR_LEDGER_NOT_A_LEDGER/, argv.join(' '));
    assert.ok(readFileSync(path).equals(before.bytes), argv.join(' '));
    assert.equal(statSync(path).mtimeMs, before.mtime, argv.join(' '));
    assert.deepEqual(
      readdirSync(rootPaths(root).ledgerDir).sort(),
      before.siblings,
      `${argv.join(' ')} created files beside it`,
    );
  }
  assert.equal(existsSync(`${path}-wal`), false);
});

test('content: an EXCHANGE in the content store passes G4; an edited block FAILS G4 and verify, the chain intact', () => {
  const root = copyRoot();
  const ledger = Ledger.open(ledgerOf(root));
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'PRC-X',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S1' },
    content: { prompt: ['{"messages":[', '{"role":"user","content":"hi"}', ']}'], response: ['hello'] },
  });
  ledger.close();
  const intact = gate(gateCheck(root), 'G4');
  assert.equal(intact.status, 'PASS', JSON.stringify(intact));
  sqlite(
    ledgerOf(root),
    "DROP TRIGGER content_blocks_redact_only; UPDATE content_blocks SET text = text || ' (edited)' WHERE rowid = 1; " +
      "CREATE TRIGGER content_blocks_redact_only BEFORE UPDATE ON content_blocks WHEN NEW.digest IS NOT OLD.digest OR NEW.size IS NOT OLD.size OR NEW.text IS NOT NULL OR NEW.redacted_by IS NULL OR OLD.text IS NULL BEGIN SELECT RAISE(ABORT, 'a content block changes only by redaction'); END;",
  );
  const g4 = gate(gateCheck(root), 'G4');
  assert.equal(g4.status, 'FAIL');
  assert.deepEqual(g4.codes, ['LEDGER_CONTENT_BLOCK_EDITED']);
  const verify = run([cplaneOf(root), 'ledger', 'verify', '--root', root]);
  assert.equal(verify.status, 1);
  assert.match(
    verify.stdout,
    /chain intact: .*\n[\s\S]*content BLOCK_EDITED: content block [0-9a-f]{64} does not hash/,
  );
});

test('content: a compressed block whose bytes no longer inflate FAILS G4 and verify with the reason, never an internal error', () => {
  const root = copyRoot();
  const ledger = Ledger.open(ledgerOf(root));
  const pasted = `{"role":"user","content":"${'the build log says the ledger test passed; '.repeat(20)}"}`;
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'PRC-X',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S1' },
    content: { prompt: ['{"messages":[', pasted, ']}'], response: ['hello'] },
  });
  ledger.close();
  assert.equal(gate(gateCheck(root), 'G4').status, 'PASS');
  // The DEFLATE stream cut in half: a BLOB that no longer inflates to the block's recorded size.
  sqlite(
    ledgerOf(root),
    'DROP TRIGGER content_blocks_redact_only; ' +
      "UPDATE content_blocks SET text = substr(text, 1, length(text) / 2) WHERE typeof(text) = 'blob'; " +
      "CREATE TRIGGER content_blocks_redact_only BEFORE UPDATE ON content_blocks WHEN NEW.digest IS NOT OLD.digest OR NEW.size IS NOT OLD.size OR NEW.text IS NOT NULL OR NEW.redacted_by IS NULL OR OLD.text IS NULL BEGIN SELECT RAISE(ABORT, 'a content block changes only by redaction'); END;",
  );
  const g4 = gate(gateCheck(root), 'G4');
  assert.equal(g4.status, 'FAIL', JSON.stringify(g4));
  assert.deepEqual(g4.codes, ['LEDGER_CONTENT_BLOCK_EDITED']);
  const verify = run([cplaneOf(root), 'ledger', 'verify', '--root', root]);
  assert.equal(verify.status, 1, verify.stdout + verify.stderr);
  assert.match(
    verify.stdout,
    /content BLOCK_EDITED: content block [0-9a-f]{64} is damaged: its compressed bytes do not inflate/,
  );
});
