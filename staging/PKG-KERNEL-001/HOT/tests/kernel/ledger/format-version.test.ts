import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import {
  exchangeOfDispatch,
  exportLedger,
  importLedger,
  Ledger,
  type LedgerEntry,
  type LedgerQuery,
  listOrphans,
  listSessions,
  verifyLedger,
} from '../../../kernel/ledger/index.js';
import { LEDGER_V2_DDL } from '../../../kernel/ledger/schema.js';
import { appendN, asVersionTwo, tamper, tempDir, tempLedger } from './helpers.js';

/** The entries table exactly as a version 1 cplane wrote it (copied, not derived from schema.ts). */
const V1_ENTRIES = `CREATE TABLE IF NOT EXISTS entries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  event_type TEXT NOT NULL,
  submission_id TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT NOT NULL,
  metadata TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  previous_hash TEXT NOT NULL,
  entry_hash TEXT NOT NULL,
  session_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.session_id'), '')) STORED,
  agent_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.agent_id'), '')) STORED,
  work_order_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.work_order_id'), '')) STORED,
  dispatch_entry_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.dispatch_entry_id'), '')) STORED
);`;

/** A ledger file as a version 1 cplane laid it out: hex TEXT hashes, every generated column STORED, version 2's indexes. */
function versionOneFile(path: string): void {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    // The version 1 table first: LEDGER_V2_DDL's own CREATE TABLE IF NOT EXISTS entries then leaves it as it is.
    db.exec(V1_ENTRIES);
    db.exec(LEDGER_V2_DDL);
    const put = db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?)');
    put.run('format', 'cplane-ledger');
    put.run('format_version', '1');
    put.run('id_start', '10000000');
  } finally {
    db.close();
  }
}

function hashTypes(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare(
        'SELECT DISTINCT typeof(previous_hash) || length(previous_hash) || typeof(entry_hash) || length(entry_hash) FROM entries',
      )
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

test('format: a new ledger keeps its hashes as 32 bytes and reads them back as the hex they hash to', (t) => {
  const ledger = tempLedger(t);
  const entries = appendN(ledger, 6);
  assert.equal(ledger.formatVersion, '3');
  assert.deepEqual(hashTypes(ledger.path), ['blob32blob32']);
  const head = ledger.head();
  assert.equal(head.hash, entries.at(-1)?.entry_hash);
  assert.match(head.hash, /^[0-9a-f]{64}$/);
  assert.equal(ledger.entryHashAt(3), entries[2]?.entry_hash);
  assert.equal(ledger.entryHashAt(99), undefined);
  assert.deepEqual(ledger.getBySeq(4), entries[3]);
  assert.equal(ledger.query({ order: 'oldest' })[1]?.previous_hash, entries[0]?.entry_hash);
  const report = verifyLedger(ledger);
  assert.equal(report.ok, true, JSON.stringify(report));
});

test('format: a version 1 file still opens, appends as it is, verifies, and exports to the same head', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'v1.sqlite');
  versionOneFile(path);
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  assert.equal(ledger.formatVersion, '1');
  assert.deepEqual(ledger.schemaProblems, []);
  const entries = appendN(ledger, 5);
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'S',
    decision: 'SUCCESS',
    reason: 'r',
    metadata: { session_id: 'S1' },
    content: { prompt: ['hello ', 'world'], response: ['hi'] },
  });
  assert.deepEqual(hashTypes(path), ['text64text64']);
  assert.equal(ledger.getBySeq(2)?.previous_hash, entries[0]?.entry_hash);
  assert.equal(verifyLedger(ledger).ok, true);
  // Export and import into a new (version 3) ledger: the same chain, so the same head.
  exportLedger(ledger, join(dir, 'v1.jsonl'));
  const copy = Ledger.open(join(dir, 'v2.sqlite'), { create: true });
  t.after(() => copy.close());
  importLedger(copy, join(dir, 'v1.jsonl'));
  assert.equal(copy.formatVersion, '3');
  assert.deepEqual(copy.head(), ledger.head());
  assert.equal(copy.history('S1')[0]?.metadata.prompt, 'hello world');
  assert.equal(verifyLedger(copy).ok, true);
});

test('format: a version 2 file whose ledger_meta claims version 1 is an altered schema', (t) => {
  const ledger = tempLedger(t);
  appendN(ledger, 3);
  ledger.close();
  asVersionTwo(ledger.path);
  tamper(ledger.path, "UPDATE ledger_meta SET value = '1' WHERE key = 'format_version'", false);
  const reopened = Ledger.open(ledger.path);
  t.after(() => reopened.close());
  assert.deepEqual(
    reopened.schemaProblems.map((p) => `${p.kind} ${p.name}`),
    ['altered entries'],
  );
  assert.equal(verifyLedger(reopened).ok, false);
  assert.throws(() => appendN(reopened, 1), { code: 'ERR_LEDGER_SCHEMA_ALTERED' });
});

test('format: a hash rewritten in place, as bytes or as hex text, is caught by verify', (t) => {
  for (const [label, sql] of [
    ['bytes', `UPDATE entries SET entry_hash = unhex('${'ab'.repeat(32)}') WHERE seq = 2`],
    ['text', `UPDATE entries SET previous_hash = '${'0'.repeat(64)}' WHERE seq = 3`],
    ['short bytes', 'UPDATE entries SET entry_hash = substr(entry_hash, 1, 31) WHERE seq = 4'],
  ] as const) {
    const ledger = tempLedger(t);
    appendN(ledger, 5);
    ledger.close();
    tamper(ledger.path, sql);
    const reopened = Ledger.open(ledger.path);
    const report = verifyLedger(reopened);
    reopened.close();
    assert.equal(report.ok, false, label);
  }
});

/** Calls of two sessions (one left unanswered), a sessionless call, and rare kinds between them. */
function calls(ledger: Ledger): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  for (let turn = 0; turn < 6; turn += 1) {
    const session = turn === 5 ? undefined : `S-${turn % 2}`;
    const meta = { agent_id: `agent-${turn % 3}`, ...(session === undefined ? {} : { session_id: session }) };
    const dispatch = ledger.append({
      event_type: 'DISPATCH',
      submission_id: 'anthropic.messages',
      decision: 'DISPATCHED',
      reason: 'r',
      metadata: meta,
    });
    out.push(dispatch);
    if (turn !== 3)
      out.push(
        ledger.append({
          event_type: 'EXCHANGE',
          submission_id: 'anthropic.messages',
          decision: 'SUCCESS',
          reason: 'r',
          metadata: { ...meta, work_order_id: `WO-${turn % 2}`, dispatch_entry_id: dispatch.id },
          content: { prompt: ['system ', `turn ${turn}`], response: [`reply ${turn}`] },
        }),
      );
    out.push(
      ledger.append({
        event_type: turn % 2 === 0 ? 'KEY_REVOKED' : 'NOTE',
        submission_id: `K-${turn}`,
        decision: 'OK',
        reason: 'r',
      }),
    );
  }
  return out;
}

const QUERIES: LedgerQuery[] = [
  {},
  { event_type: 'DISPATCH' },
  { event_type: 'EXCHANGE', order: 'oldest', limit: 2 },
  { event_type: 'KEY_REVOKED' },
  { event_type: 'NOTE', submission_id: 'K-1' },
  { submission_id: 'anthropic.messages', limit: 3 },
  { session_id: 'S-0' },
  { session_id: 'S-1', event_type: 'EXCHANGE' },
  { agent_id: 'agent-1' },
  { work_order_id: 'WO-0' },
];

/** Every answer a reader gives about the file: queries, history, sessions, orphans and each DISPATCH's EXCHANGE. */
function answers(ledger: Ledger, dispatches: string[]): unknown {
  return {
    queries: QUERIES.map((q) => ledger.query(q).map((e) => e.id)),
    history: ledger.history('S-0').map((e) => [e.id, e.metadata.prompt]),
    sessions: listSessions(ledger).sessions.map((s) => s.session_id),
    orphans: listOrphans(ledger, { timeoutMs: 0, now: Date.parse('2030-01-01T00:00:00Z') }).map((e) => e.id),
    exchanges: dispatches.map((id) => exchangeOfDispatch(ledger, id) ?? null),
  };
}

function indexNames(ledger: Ledger): string[] {
  return ledger.db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL ORDER BY name",
    )
    .pluck()
    .all() as string[];
}

test("format: a version 2 file reads as it is; a writer's open moves it to version 3 with the same answers", (t) => {
  const ledger = tempLedger(t);
  const entries = calls(ledger);
  const dispatches = entries.filter((e) => e.event_type === 'DISPATCH').map((e) => e.id);
  const expected = answers(ledger, dispatches);
  ledger.close();
  asVersionTwo(ledger.path);

  const reader = Ledger.open(ledger.path, { readonly: true });
  assert.equal(reader.formatVersion, '2');
  assert.deepEqual(reader.schemaProblems, []);
  assert.deepEqual(indexNames(reader), [
    'entries_agent',
    'entries_dispatch_link',
    'entries_event_type',
    'entries_session',
    'entries_submission',
    'entries_work_order',
  ]);
  assert.deepEqual(answers(reader, dispatches), expected);
  assert.equal(verifyLedger(reader).ok, true);
  reader.close();

  const writer = Ledger.open(ledger.path);
  t.after(() => writer.close());
  assert.equal(writer.formatVersion, '3');
  assert.deepEqual(writer.schemaProblems, []);
  assert.deepEqual(indexNames(writer), [
    'entries_agent',
    'entries_rare_kind',
    'entries_session',
    'entries_submission',
    'entries_work_order',
  ]);
  assert.deepEqual(answers(writer, dispatches), expected);
  const report = verifyLedger(writer);
  assert.equal(report.ok, true, JSON.stringify(report));
  const more = appendN(writer, 2);
  assert.equal(more[0]?.previous_hash, entries.at(-1)?.entry_hash);
  assert.equal(verifyLedger(writer).ok, true);
  assert.deepEqual(
    writer.query({ event_type: 'TEST' }).map((e) => e.id),
    more.map((e) => e.id).reverse(),
  );
});

test("format: a version 2 file with an altered schema is left as found by a writer's open, and refused", (t) => {
  const ledger = tempLedger(t);
  appendN(ledger, 3);
  ledger.close();
  asVersionTwo(ledger.path);
  tamper(ledger.path, 'DROP TRIGGER entries_no_delete', false);
  const writer = Ledger.open(ledger.path);
  t.after(() => writer.close());
  assert.equal(writer.formatVersion, '2');
  assert.deepEqual(
    writer.schemaProblems.map((p) => `${p.kind} ${p.name}`),
    ['missing entries_no_delete'],
  );
  assert.ok(indexNames(writer).includes('entries_event_type'));
  assert.throws(() => appendN(writer, 1), { code: 'ERR_LEDGER_SCHEMA_ALTERED' });
});
