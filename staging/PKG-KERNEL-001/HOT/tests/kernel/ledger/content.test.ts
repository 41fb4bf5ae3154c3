import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CONTENT_DDL,
  computeEntryHash,
  EMPTY_LIST,
  exportLedger,
  importLedger,
  Ledger,
  listDigest,
  blockDigest,
  verifyLedger,
  type AppendInput,
} from '../../../kernel/ledger/index.js';
import { CpError } from '../../../kernel/errors.js';
import { tempDir, tempLedger } from './helpers.js';

const SYSTEM = `You are a coding agent. ${'Follow the house rules. '.repeat(400)}`;

/** One turn of a growing conversation: the whole history resent, as agents do, cut into one piece per message. */
function turn(n: number, extra = ''): AppendInput {
  const pieces = ['{"system":', JSON.stringify(SYSTEM), ',"messages":['];
  for (let i = 0; i <= n; i += 1) {
    if (i > 0) pieces.push(',');
    pieces.push(
      JSON.stringify({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} ${i === n ? extra : ''}` }),
    );
  }
  pieces.push(']}');
  return {
    event_type: 'EXCHANGE',
    submission_id: 'anthropic.messages',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S1', agent_id: 'A1', outcome: 'success' },
    content: { prompt: pieces, response: [`answer ${n}`] },
  };
}

const promptOf = (input: AppendInput): string => (input.content?.prompt ?? []).join('');

function count(ledger: Ledger, table: string): number {
  return ledger.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
}

/** Raw write access to the file, triggers dropped and put back, as an attacker with the file would. */
function tamperContent(path: string, sql: string): void {
  const db = new Database(path);
  try {
    db.exec(
      'DROP TRIGGER content_blocks_no_delete; DROP TRIGGER content_blocks_redact_only; DROP TRIGGER content_lists_no_update; DROP TRIGGER content_lists_no_delete;',
    );
    db.exec(sql);
    db.exec(CONTENT_DDL);
  } finally {
    db.close();
  }
}

test('golden vector: an EXCHANGE written through the content store commits to its lists by digest', () => {
  // Values cross-checked with `printf '%s' … | sha256sum`: blocks over their UTF-8 bytes, list nodes over
  // parent + block (128 hex characters), the entry exactly as any other entry.
  assert.equal(blockDigest('Hello, '), '23429bd9ba98dd5140309bb9b0094b3aad642430fff6fb3ca61f008ce644f34a');
  assert.equal(blockDigest('wörld'), '86cf64314d22bd5603471b33c340c58531e88488493eaec81bdb95f94f14deaf');
  const l1 = listDigest(EMPTY_LIST, blockDigest('Hello, '));
  assert.equal(l1, 'b7b7861fb09427d22f4cc3c38bf8ad7358109fcb9c1383bfa43609f1c96adeb9');
  const prompt = listDigest(l1, blockDigest('wörld'));
  assert.equal(prompt, '04bd88945c3e4b2c5957c7122be346a9a3e45429f69a0bb32e53101ca3df9f55');
  const response = listDigest(EMPTY_LIST, blockDigest('Hi'));
  assert.equal(response, '2a7d0c91d590e6e199946243dc23fba074babaa2e825591badbb0510ad69d1ef');
  const entry = {
    id: 'LED-00000003',
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S', content: { prompt, response } },
    timestamp: '2026-01-02T03:04:07.000Z',
    previous_hash: 'e48ede0f2205604050d250bc0e2b2a6e200e5e06a223e555a42a422c4899a3c9',
  };
  assert.equal(computeEntryHash(entry), 'daa6127e68c6780f41313c0873d723a16846783fa6e21797459d786b350f7477');
});

test('a growing conversation is stored once: each turn adds only its new messages, and reads back byte for byte', (t) => {
  const ledger = tempLedger(t);
  const turns = Array.from({ length: 40 }, (_, n) => turn(n, n === 7 ? 'wörld 😀 \u{10FFFF}' : ''));
  for (const input of turns) {
    const [entry] = ledger.appendBatch([input]);
    // The caller gets the entry as a read shows it.
    assert.equal(entry?.metadata.prompt, promptOf(input));
    assert.equal('content' in (entry?.metadata ?? {}), false);
  }
  const read = ledger.history('S1');
  assert.equal(read.length, 40);
  read.forEach((entry, n) => {
    assert.equal(entry.metadata.prompt, promptOf(turns[n] as AppendInput), `turn ${n}`);
    assert.equal(entry.metadata.response, `answer ${n}`);
    assert.equal(ledger.get(entry.id)?.metadata.prompt, promptOf(turns[n] as AppendInput));
  });
  // The system prompt (10 KB) is one block; 40 turns add 40 messages (turn 7's also in the form it had as the
  // newest, with its extra text), 40 answers and four pieces of glue. The system prompt is stored compressed.
  const systemRows = ledger.db
    .prepare('SELECT typeof(text) FROM content_blocks WHERE digest = unhex(?)')
    .pluck()
    .all(blockDigest(JSON.stringify(SYSTEM))) as string[];
  assert.deepEqual(systemRows, ['blob']);
  assert.equal(count(ledger, 'content_blocks'), 1 + 41 + 40 + 4);
  const stored = ledger.db.prepare('SELECT sum(size) FROM content_blocks').pluck().get() as number;
  const naive = turns.reduce((sum, input) => sum + Buffer.byteLength(promptOf(input)), 0);
  assert.ok(stored * 20 < naive, `stored ${stored} bytes for ${naive} bytes of prompts`);
  // The stored entry holds digests only, never the text.
  const raw = ledger.db.prepare("SELECT metadata FROM entries WHERE event_type = 'EXCHANGE'").pluck().all() as string[];
  assert.ok(raw.every((m) => !m.includes('house rules') && /"content":\{"prompt":"[0-9a-f]{64}"/.test(m)));
  const result = verifyLedger(ledger);
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.content?.blocks, count(ledger, 'content_blocks'));
  assert.equal(result.content?.redacted_blocks, 0);
});

test('metadata keys in any order, a content key among them, keep their values; metadata.content is the digests', (t) => {
  const ledger = tempLedger(t);
  const input = turn(0);
  const [entry] = ledger.appendBatch([
    { ...input, metadata: { zone: 'z', content: 'stale', agent_id: 'A1', session_id: 'S1', prompt: 'dropped' } },
  ]);
  assert.equal(entry?.metadata.prompt, promptOf(input));
  const stored = JSON.parse(
    ledger.db.prepare('SELECT metadata FROM entries WHERE id = ?').pluck().get(entry?.id) as string,
  ) as Record<string, unknown>;
  assert.deepEqual(Object.keys(stored), ['agent_id', 'content', 'session_id', 'zone']);
  assert.match(JSON.stringify(stored.content), /^\{"prompt":"[0-9a-f]{64}","response":"[0-9a-f]{64}"\}$/);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('content is refused at the edge when it is not pieces of text; a lone surrogate is stored as U+FFFD and still verifies', (t) => {
  const ledger = tempLedger(t);
  const bad = (content: unknown): void => {
    assert.throws(
      () => ledger.append({ ...turn(0), content } as AppendInput),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_LEDGER_ENTRY_INVALID',
    );
  };
  bad({ prompt: 'text', response: [] });
  bad({ prompt: [1], response: [] });
  bad({ prompt: [], response: [], extra: [] });
  bad(null);
  // Digests written by hand would name content that is not there: only the store writes metadata.content.
  const forged = { prompt: 'a'.repeat(64), response: EMPTY_LIST };
  assert.throws(
    () =>
      ledger.append({
        event_type: 'EXCHANGE',
        submission_id: 'S',
        decision: 'OK',
        reason: 'r',
        metadata: { content: forged },
      }),
    (e: unknown) =>
      e instanceof CpError && e.code === 'ERR_LEDGER_ENTRY_INVALID' && /only the content store/.test(e.message),
  );
  assert.equal(ledger.head().seq, 0, 'nothing was written');
  const entry = ledger.append({ ...turn(0), content: { prompt: ['a\ud800b'], response: [''] } });
  assert.equal(entry.metadata.prompt, 'a\ufffdb');
  assert.equal(ledger.get(entry.id)?.metadata.prompt, 'a\ufffdb');
  assert.equal(ledger.get(entry.id)?.metadata.response, '');
  assert.equal(verifyLedger(ledger).ok, true);
});

test('tampering with content is caught: an edited block, a deleted block, two blocks swapped, a node deleted', (t) => {
  const cases: [string, (db: Ledger) => string, string][] = [
    [
      'edited',
      () => "UPDATE content_blocks SET text = replace(text, 'message 3', 'message 9') WHERE text LIKE '%message 3%'",
      'block_edited',
    ],
    ['deleted', () => "DELETE FROM content_blocks WHERE text LIKE '%message 2%'", 'block_missing'],
    [
      'swapped',
      () =>
        "UPDATE content_blocks SET text = CASE WHEN text LIKE '%message 1 %' THEN (SELECT text FROM content_blocks WHERE text LIKE '%message 2 %') ELSE (SELECT text FROM content_blocks WHERE text LIKE '%message 1 %') END WHERE text LIKE '%message 1 %' OR text LIKE '%message 2 %'",
      'block_edited',
    ],
    [
      'text removed, no redaction',
      () => "UPDATE content_blocks SET text = NULL, redacted_by = 'LED-00000001' WHERE text LIKE '%message 1 %'",
      'block_deleted',
    ],
    ['node deleted', (l) => `DELETE FROM content_lists WHERE digest = unhex('${nodeOf(l)}')`, 'list_missing'],
    [
      'the list an entry commits to deleted',
      (l) =>
        `DELETE FROM content_lists WHERE digest = unhex('${l.db.prepare("SELECT json_extract(metadata, '$.content.prompt') FROM entries ORDER BY seq DESC LIMIT 1").pluck().get() as string}')`,
      'list_missing',
    ],
  ];
  for (const [name, sql, kind] of cases) {
    const dir = tempDir(t);
    const path = join(dir, 'ledger.sqlite');
    const ledger = Ledger.open(path, { create: true });
    for (let n = 0; n < 4; n += 1) ledger.append(turn(n));
    assert.equal(verifyLedger(ledger).ok, true);
    const statement = sql(ledger);
    ledger.close();
    tamperContent(path, statement);
    const reopened = Ledger.open(path, { readonly: true });
    const result = verifyLedger(reopened);
    // Reading a damaged exchange never throws: what is not there is shown as missing.
    assert.doesNotThrow(() => reopened.history('S1'));
    reopened.close();
    assert.equal(result.ok, false, name);
    assert.equal(result.first_bad, undefined, `${name}: the chain itself is intact`);
    assert.ok(
      result.content?.problems.some((p) => p.kind === kind),
      `${name}: ${JSON.stringify(result.content?.problems)}`,
    );
  }
});

/** The list node of the first two messages of turn 3 (shared by every later turn). */
function nodeOf(ledger: Ledger): string {
  const rows = ledger.db.prepare('SELECT lower(hex(digest)) FROM content_lists').pluck().all() as string[];
  return rows[Math.floor(rows.length / 2)] as string;
}

test('the triggers keep content append-only; dropping one is a schema problem verify reports', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  ledger.append(turn(1));
  assert.throws(() => ledger.db.exec('DELETE FROM content_blocks'), /redacted, never deleted/);
  assert.throws(() => ledger.db.exec("UPDATE content_blocks SET text = 'x'"), /only by redaction/);
  assert.throws(() => ledger.db.exec('DELETE FROM content_lists'), /append-only/);
  ledger.close();
  const db = new Database(path);
  db.exec('DROP TRIGGER content_blocks_no_delete');
  db.close();
  const reopened = Ledger.open(path, { readonly: true });
  t.after(() => reopened.close());
  const result = verifyLedger(reopened);
  assert.equal(result.ok, false);
  assert.ok(result.schema_problems?.some((p) => p.name === 'content_blocks_no_delete' && p.kind === 'missing'));
});

test('export carries each block once and import restores the same chain, content and text', (t) => {
  const dir = tempDir(t);
  const source = tempLedger(t);
  source.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'before' });
  const turns = Array.from({ length: 10 }, (_, n) => turn(n));
  for (const input of turns) source.append(input);
  const file = join(dir, 'export.jsonl');
  const head = exportLedger(source, file);
  const text = readFileSync(file, 'utf8');
  assert.equal(text.split(JSON.stringify(SYSTEM).slice(1, 40)).length - 1, 1, 'the system prompt is exported once');
  const target = Ledger.open(join(dir, 'imported.sqlite'), { create: true });
  t.after(() => target.close());
  assert.deepEqual(importLedger(target, file), head);
  assert.equal(verifyLedger(target).ok, true);
  target.history('S1').forEach((entry, n) => {
    assert.equal(entry.metadata.prompt, promptOf(turns[n] as AppendInput));
  });
  // An export whose block was edited, or which lacks a block an entry needs, imports nothing.
  const lines = text.trimEnd().split('\n');
  const edited = lines.map((l) => (l.startsWith('{"content_block"') ? l.replace('message 0', 'message X') : l));
  const missing = lines.filter((l, i) => !(l.startsWith('{"content_list"') && i === lines.length - 2));
  for (const [name, variant] of [
    ['edited', edited],
    ['missing', missing],
  ] as const) {
    writeFileSync(join(dir, `${name}.jsonl`), `${variant.join('\n')}\n`);
    const fresh = Ledger.open(join(dir, `${name}.sqlite`), { create: true });
    assert.throws(
      () => importLedger(fresh, join(dir, `${name}.jsonl`)),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_LEDGER_IMPORT_TAMPERED',
      name,
    );
    assert.equal(fresh.head().seq, 0);
    fresh.close();
  }
});

const SECRET = 'hunter2-correct-horse-battery-staple';

/** A 12-turn session whose turn 5 pastes a secret, written to a ledger file; returns the path and the inputs. */
function sessionWithSecret(t: { after: (fn: () => void) => void }): { path: string; turns: AppendInput[] } {
  const path = join(tempDir(t), 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  const turns = Array.from({ length: 12 }, (_, n) => turn(n, n === 5 ? `my password is ${SECRET}` : ''));
  for (const input of turns) ledger.append(input);
  ledger.close();
  return { path, turns };
}

function filesHold(path: string, text: string): string[] {
  const needle = Buffer.from(text);
  return ['', '-wal', '-shm'].filter((suffix) => {
    try {
      return readFileSync(path + suffix).includes(needle);
    } catch {
      return false;
    }
  });
}

test('redact: the block holding a pasted secret is gone from every file, the chain verifies, every turn still reads', (t) => {
  const { path, turns } = sessionWithSecret(t);
  assert.deepEqual(filesHold(path, SECRET).length > 0, true, 'the secret is on disk before');
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  const target = ledger.history('S1')[5]?.id as string;
  const withSecret = (ledger.exchangeBlocks(target) ?? []).filter((digest) =>
    ledger.content.block(digest)?.text?.includes(SECRET),
  );
  assert.equal(withSecret.length, 1);
  const result = ledger.redact(withSecret, {
    reason: 'a password pasted into a prompt',
    by: 'tester',
    exchanges: [target],
  });
  assert.equal(result.redacted, 1);
  assert.equal(result.checkpointed, true);
  assert.equal(result.entry.event_type, 'REDACTED');
  assert.deepEqual(result.entry.metadata.blocks, withSecret);
  assert.deepEqual(filesHold(path, SECRET), [], 'no file under the ledger holds the secret');
  const verified = verifyLedger(ledger);
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal(verified.content?.redacted_blocks, 1);
  // Every other turn reads back exactly; turn 5 shows the marker where its message was.
  ledger.history('S1').forEach((entry, n) => {
    const sent = promptOf(turns[n] as AppendInput);
    if (n !== 5) assert.equal(entry.metadata.prompt, sent, `turn ${n}`);
    else {
      assert.equal(String(entry.metadata.prompt).includes(SECRET), false);
      assert.ok(String(entry.metadata.prompt).includes(`[REDACTED:${result.entry.id}]`), `turn ${n}`);
    }
  });
  // Redacting again changes nothing but records the attempt.
  assert.equal(ledger.redact(withSecret, { reason: 'again', by: 'tester', exchanges: [] }).already, 1);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('redact: a disk too full to checkpoint the WAL after the redaction committed is a warning, never a failure', (t) => {
  const { path } = sessionWithSecret(t);
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  const target = ledger.history('S1')[5]?.id as string;
  const blocks = ledger.exchangeBlocks(target) ?? [];
  // The checkpoint copies pages into the main file, which a full disk refuses after the commit has landed.
  const pragma = ledger.db.pragma.bind(ledger.db);
  ledger.db.pragma = ((source: string, options?: { simple?: boolean }) => {
    if (source.startsWith('wal_checkpoint'))
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    return pragma(source, options);
  }) as typeof ledger.db.pragma;
  const result = ledger.redact(blocks, { reason: 'r', by: 'tester', exchanges: [target] });
  assert.equal(result.checkpointed, false);
  assert.equal(result.redacted, blocks.length);
  assert.match(result.warnings.join('\n'), /redaction is recorded.*no space left on the device.*-wal file/s);
  assert.equal(ledger.query({ event_type: 'REDACTED' }).length, 1);
  assert.equal(verifyLedger(ledger).ok, true);
  // Anything that is not the machine's fault is still a bug, and still thrown.
  ledger.db.pragma = ((source: string, options?: { simple?: boolean }) => {
    if (source.startsWith('wal_checkpoint')) throw new TypeError('not a fault of the disk');
    return pragma(source, options);
  }) as typeof ledger.db.pragma;
  assert.throws(() => ledger.redact(blocks, { reason: 'r', by: 'tester', exchanges: [target] }), TypeError);
});

test('redact: a REDACTED record removed from the chain, or a block emptied under another record, FAILS verify', (t) => {
  const { path } = sessionWithSecret(t);
  const ledger = Ledger.open(path);
  const target = ledger.history('S1')[5]?.id as string;
  const blocks = ledger.exchangeBlocks(target) ?? [];
  const secret = blocks.find((d) => ledger.content.block(d)?.text?.includes(SECRET)) as string;
  const other = blocks.find((d) => ledger.content.block(d)?.text?.includes('message 4')) as string;
  const { entry } = ledger.redact([secret], { reason: 'r', by: 'tester', exchanges: [target] });
  ledger.close();
  // The REDACTED record deleted (it was the head, so the chain alone cannot tell).
  const db = new Database(path);
  db.exec('DROP TRIGGER entries_no_delete');
  db.prepare('DELETE FROM entries WHERE id = ?').run(entry.id);
  db.exec(
    "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END",
  );
  db.close();
  let reopened = Ledger.open(path, { readonly: true });
  let result = verifyLedger(reopened);
  reopened.close();
  assert.equal(result.ok, false);
  assert.deepEqual(
    result.content?.problems.map((p) => [p.kind, p.digest]),
    [['block_deleted', secret]],
  );
  // Another block's text removed, claiming a REDACTED record that never named it.
  const second = sessionWithSecret(t);
  const l2 = Ledger.open(second.path);
  const id5 = l2.history('S1')[5]?.id as string;
  const b2 = l2.exchangeBlocks(id5) ?? [];
  const s2 = b2.find((d) => l2.content.block(d)?.text?.includes(SECRET)) as string;
  const o2 = b2.find((d) => l2.content.block(d)?.text?.includes('message 4')) as string;
  assert.equal(o2, other, 'the same conversation has the same blocks');
  const { entry: e2 } = l2.redact([s2], { reason: 'r', by: 'tester', exchanges: [id5] });
  l2.close();
  tamperContent(
    second.path,
    `UPDATE content_blocks SET text = NULL, redacted_by = '${e2.id}' WHERE digest = unhex('${o2}')`,
  );
  reopened = Ledger.open(second.path, { readonly: true });
  result = verifyLedger(reopened);
  reopened.close();
  assert.equal(result.ok, false);
  assert.deepEqual(
    result.content?.problems.map((p) => [p.kind, p.digest]),
    [['block_deleted', o2]],
  );
});

test('redact: export carries a redacted block without its text, and import restores a chain that verifies', (t) => {
  const { path } = sessionWithSecret(t);
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  const target = ledger.history('S1')[5]?.id as string;
  const secret = (ledger.exchangeBlocks(target) ?? []).find((d) =>
    ledger.content.block(d)?.text?.includes(SECRET),
  ) as string;
  const { entry } = ledger.redact([secret], { reason: 'r', by: 'tester', exchanges: [target] });
  const file = join(tempDir(t), 'export.jsonl');
  const head = exportLedger(ledger, file);
  const text = readFileSync(file, 'utf8');
  assert.equal(text.includes(SECRET), false);
  assert.ok(text.includes(`{"content_block":{"digest":"${secret}","redacted_by":"${entry.id}"`));
  const target2 = Ledger.open(join(tempDir(t), 'imported.sqlite'), { create: true });
  t.after(() => target2.close());
  assert.deepEqual(importLedger(target2, file), head);
  const verified = verifyLedger(target2);
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal(verified.content?.redacted_blocks, 1);
  assert.ok(String(target2.history('S1')[5]?.metadata.prompt).includes(`[REDACTED:${entry.id}]`));
  // The same file with the REDACTED entry cut out imports nothing.
  const cut = text
    .split('\n')
    .filter((l) => !l.includes('"event_type":"REDACTED"'))
    .join('\n');
  const cutFile = join(tempDir(t), 'cut.jsonl');
  writeFileSync(cutFile, cut);
  const fresh = Ledger.open(join(tempDir(t), 'cut.sqlite'), { create: true });
  t.after(() => fresh.close());
  assert.throws(
    () => importLedger(fresh, cutFile),
    (e: unknown) =>
      e instanceof CpError && e.code === 'ERR_LEDGER_IMPORT_TAMPERED' && /no REDACTED entry/.test(e.message),
  );
  assert.equal(fresh.head().seq, 0);
});

test('an entry whose stored metadata is not a JSON object is a damaged ledger on every read, not an internal error', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  const first = ledger.append(turn(1));
  ledger.close();
  const db = new Database(path);
  const triggers = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'entries'")
    .all() as { name: string; sql: string }[];
  for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
  db.prepare('UPDATE entries SET metadata = ? WHERE id = ?').run('["not", "an object"]', first.id);
  for (const { sql } of triggers) db.exec(sql);
  db.close();
  const reopened = Ledger.open(path, { readonly: true });
  t.after(() => reopened.close());
  const damaged = (error: unknown): boolean =>
    error instanceof CpError && error.code === 'ERR_LEDGER_DAMAGED' && error.details?.entry === first.id;
  assert.throws(() => reopened.get(first.id), damaged);
  assert.throws(() => reopened.exchangeBlocks(first.id), damaged);
  const result = verifyLedger(reopened);
  assert.equal(result.ok, false);
  assert.equal(result.first_bad?.id, first.id);
});

test('redact: a redacted block whose text is put back FAILS verify, and an export carrying it is refused; the same text sent again stays redacted', (t) => {
  const { path } = sessionWithSecret(t);
  const ledger = Ledger.open(path);
  const target = ledger.history('S1')[5]?.id as string;
  const secret = (ledger.exchangeBlocks(target) ?? []).find((d) =>
    ledger.content.block(d)?.text?.includes(SECRET),
  ) as string;
  const text = ledger.content.block(secret)?.text as string;
  const { entry } = ledger.redact([secret], { reason: 'r', by: 'tester', exchanges: [target] });
  // A writer storing the very text again (the conversation resent) finds the row redacted and leaves it so.
  ledger.append(turn(5, `my password is ${SECRET}`));
  assert.equal(ledger.content.block(secret)?.text, undefined);
  const clean = verifyLedger(ledger);
  assert.equal(clean.ok, true, JSON.stringify(clean));
  const exported = join(tempDir(t), 'export.jsonl');
  exportLedger(ledger, exported);
  ledger.close();

  // REPLACE deletes the redacted row without firing the delete trigger: no trigger has to be dropped.
  const db = new Database(path);
  db.prepare('INSERT OR REPLACE INTO content_blocks (digest, size, text) VALUES (unhex(?), ?, ?)').run(
    secret,
    Buffer.byteLength(text),
    text,
  );
  db.close();
  const reopened = Ledger.open(path, { readonly: true });
  const result = verifyLedger(reopened);
  reopened.close();
  assert.equal(result.ok, false);
  assert.equal(result.first_bad, undefined, 'the chain itself is intact');
  assert.deepEqual(
    result.content?.problems.map((p) => [p.kind, p.digest]),
    [['block_restored', secret]],
  );
  assert.match(result.content?.problems[0]?.message ?? '', new RegExp(entry.id));

  // The export with the redacted block's line carrying its text again.
  const line = JSON.stringify({ content_block: { digest: secret, size: Buffer.byteLength(text), text } });
  const restored = readFileSync(exported, 'utf8')
    .split('\n')
    .map((l) => (l.startsWith(`{"content_block":{"digest":"${secret}"`) ? line : l))
    .join('\n');
  assert.ok(restored.includes(SECRET));
  const restoredFile = join(tempDir(t), 'restored.jsonl');
  writeFileSync(restoredFile, restored);
  const fresh = Ledger.open(join(tempDir(t), 'fresh.sqlite'), { create: true });
  t.after(() => fresh.close());
  assert.throws(
    () => importLedger(fresh, restoredFile),
    (e: unknown) =>
      e instanceof CpError &&
      e.code === 'ERR_LEDGER_IMPORT_TAMPERED' &&
      e.message.includes(secret) &&
      e.message.includes(entry.id),
  );
  assert.equal(fresh.head().seq, 0);
});
