import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cli } from './run-cli.js';
import { rootPaths } from '../../kernel/root/layout.js';
import { Ledger } from '../../kernel/ledger/index.js';

function tempRoot(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-ledger-cli-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

const APPEND = ['--event-type', 'EXCHANGE', '--submission-id', 'C-1', '--decision', 'SUCCESS', '--reason', 'ok'];

test('append creates the ledger under ROOT/HOT/ledger and prints the id; --json prints the entry', async (t) => {
  const root = tempRoot(t);
  const first = await cli('ledger', 'append', '--root', root, ...APPEND, '--metadata', '{"session_id":"S1"}');
  assert.equal(first.code, 0, first.err);
  assert.match(first.out.trim(), /^LED-[a-f0-9]{8}$/);
  assert.ok(existsSync(rootPaths(root).ledgerFile));
  const second = await cli(
    'ledger',
    'append',
    '--root',
    root,
    ...APPEND,
    '--metadata',
    '{"session_id":"S2"}',
    '--json',
  );
  const entry = JSON.parse(second.out) as { id: string; previous_hash: string; metadata: unknown };
  assert.deepEqual(entry.metadata, { session_id: 'S2' });
  const head = await cli('ledger', 'head', '--root', root);
  assert.match(head.out.trim(), /^2:[0-9a-f]{64}$/);
  const headJson = JSON.parse((await cli('ledger', 'head', '--root', root, '--json')).out) as {
    seq: number;
    hash: string;
  };
  assert.equal(headJson.seq, 2);
  const query = JSON.parse(
    (
      await cli(
        'ledger',
        'query',
        '--root',
        root,
        '--event-type',
        'EXCHANGE',
        '--session',
        'S2',
        '--limit',
        '5',
        '--json',
      )
    ).out,
  ) as { id: string }[];
  assert.deepEqual(
    query.map((e) => e.id),
    [entry.id],
  );
  const tail = await cli('ledger', 'tail', '--root', root, '-n', '1');
  assert.match(tail.out, new RegExp(`^${entry.id}  `));
});

test('verify exits 0 when intact and 1 naming the first bad id when not; --anchor catches a deleted tail', async (t) => {
  const file = join(tempRoot(t), 'l.sqlite');
  const ids: string[] = [];
  for (let i = 0; i < 4; i += 1) ids.push((await cli('ledger', 'append', '--ledger', file, ...APPEND)).out.trim());
  const anchor = (await cli('ledger', 'head', '--ledger', file)).out.trim();
  const ok = await cli('ledger', 'verify', '--ledger', file, '--anchor', anchor);
  assert.equal(ok.code, 0);
  assert.match(ok.out, /ledger intact: 4 entries/);
  const db = new Database(file);
  db.exec('DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE seq = 4;');
  db.exec(
    "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries\n  BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END",
  );
  db.close();
  assert.equal((await cli('ledger', 'verify', '--ledger', file)).code, 0);
  const truncated = await cli('ledger', 'verify', '--ledger', file, '--anchor', anchor, '--json');
  assert.equal(truncated.code, 1);
  assert.equal((JSON.parse(truncated.out) as { first_bad: { problem: string } }).first_bad.problem, 'truncated');
  const db2 = new Database(file);
  db2.exec("DROP TRIGGER entries_no_update; UPDATE entries SET reason = 'forged' WHERE seq = 2;");
  db2.close();
  const edited = await cli('ledger', 'verify', '--ledger', file);
  assert.equal(edited.code, 1);
  assert.match(edited.out, new RegExp(`BROKEN at ${ids[1]}: edited`));
  const badAnchor = await cli('ledger', 'verify', '--ledger', file, '--anchor', 'nonsense');
  assert.equal(badAnchor.code, 3);
  assert.match(badAnchor.err, /ERR_LEDGER_ANCHOR_INVALID/);
});

test('export to a file and import into a new ledger round-trips; a tampered export imports nothing', async (t) => {
  const dir = tempRoot(t);
  const source = join(dir, 'a.sqlite');
  for (let i = 0; i < 3; i += 1)
    await cli('ledger', 'append', '--ledger', source, ...APPEND, '--metadata', `{"i":${i}}`);
  const out = join(dir, 'a.jsonl');
  const exported = JSON.parse((await cli('ledger', 'export', '--ledger', source, '--out', out, '--json')).out) as {
    head: { seq: number; hash: string };
  };
  const stdoutExport = (await cli('ledger', 'export', '--ledger', source)).out;
  assert.equal(stdoutExport, readFileSync(out, 'utf8'));
  const anchor = `${exported.head.seq}:${exported.head.hash}`;
  const imported = await cli('ledger', 'import', '--ledger', join(dir, 'b.sqlite'), '--from', out, '--anchor', anchor);
  assert.equal(imported.code, 0, imported.err);
  assert.equal(imported.out.trim(), `imported 3 entries, head ${anchor}`);
  writeFileSync(out, readFileSync(out, 'utf8').replace('"i":1', '"i":7'));
  const refused = await cli('ledger', 'import', '--ledger', join(dir, 'c.sqlite'), '--from', out, '--json');
  assert.equal(refused.code, 3);
  assert.equal((JSON.parse(refused.out) as { error: { code: string } }).error.code, 'ERR_LEDGER_IMPORT_TAMPERED');
  assert.equal(existsSync(join(dir, 'c.sqlite')), false, 'nothing was created');
  const again = await cli('ledger', 'import', '--ledger', join(dir, 'b.sqlite'), '--from', join(dir, 'a.jsonl'));
  assert.equal(again.code, 3);
});

test('orphans lists a DISPATCH with no EXCHANGE once the timeout has passed', async (t) => {
  const file = join(tempRoot(t), 'o.sqlite');
  const meta = '{"contract_id":"C-1","agent_id":"A","session_id":"S"}';
  const dispatch = [
    '--event-type',
    'DISPATCH',
    '--submission-id',
    'C-1',
    '--decision',
    'DISPATCHED',
    '--reason',
    'r',
    '--metadata',
    meta,
  ];
  const done = (await cli('ledger', 'append', '--ledger', file, ...dispatch)).out.trim();
  await cli(
    'ledger',
    'append',
    '--ledger',
    file,
    ...APPEND,
    '--metadata',
    JSON.stringify({ session_id: 'S', dispatch_entry_id: done }),
  );
  const lost = (await cli('ledger', 'append', '--ledger', file, ...dispatch)).out.trim();
  assert.match((await cli('ledger', 'orphans', '--ledger', file)).out, /no orphaned dispatches/);
  const orphans = JSON.parse((await cli('ledger', 'orphans', '--ledger', file, '--timeout-ms', '0', '--json')).out) as {
    id: string;
  }[];
  assert.deepEqual(
    orphans.map((e) => e.id),
    [lost],
  );
});

test('bad input: coded errors, usage exit 2, and nothing written', async (t) => {
  const root = tempRoot(t);
  const ledgerFile = rootPaths(root).ledgerFile;
  const malformed = await cli('ledger', 'append', '--root', root, ...APPEND, '--metadata', '{nope');
  assert.equal(malformed.code, 3);
  assert.match(malformed.err, /ERR_LEDGER_ENTRY_INVALID: --metadata is not valid JSON: "\{nope"/);
  assert.match(malformed.err, /hint: /);
  const notObject = await cli('ledger', 'append', '--root', root, ...APPEND, '--metadata', '[1]', '--json');
  assert.equal((JSON.parse(notObject.out) as { error: { code: string } }).error.code, 'ERR_LEDGER_ENTRY_INVALID');
  const missing = await cli('ledger', 'append', '--root', root, '--event-type', 'X', '--json');
  assert.equal(missing.code, 2);
  const error = (JSON.parse(missing.out) as { error: { code: string; message: string; hint: string } }).error;
  assert.equal(error.code, 'ERR_USAGE');
  assert.match(error.message, /submission-id/);
  assert.equal(existsSync(ledgerFile), false, 'no ledger was created by refused appends');
  const unknownOption = await cli('ledger', 'append', '--root', root, ...APPEND, '--colour', 'red');
  assert.equal(unknownOption.code, 2);
  assert.match(unknownOption.err, /ERR_USAGE: Unknown argument: colour/);
  assert.equal((await cli('ledger', 'frobnicate')).code, 2);
  assert.equal((await cli('ledger')).code, 2);
  assert.equal(
    (await cli('ledger', 'head', '--root', root, '--ledger', join(root, 'x'))).code,
    2,
    '--root and --ledger conflict',
  );
  assert.equal((await cli('ledger', 'head')).code, 2, 'a ledger subcommand needs --root or --ledger');
  const notFound = await cli('ledger', 'verify', '--root', root);
  assert.equal(notFound.code, 3);
  assert.match(notFound.err, /ERR_LEDGER_NOT_FOUND/);
  const text = join(root, 'notes.txt');
  writeFileSync(text, 'not a database, just words '.repeat(50));
  const foreign = await cli('ledger', 'append', '--ledger', text, ...APPEND);
  assert.equal(foreign.code, 3);
  assert.match(foreign.err, /ERR_LEDGER_NOT_A_LEDGER/);
  assert.equal(readFileSync(text, 'utf8'), 'not a database, just words '.repeat(50));
});

test('unknown commands and options exit 2 with ERR_USAGE; --json errors are {"error":{code,...}}', async () => {
  const unknown = await cli('nope');
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /ERR_USAGE/);
  const json = await cli('nope', '--json');
  assert.equal(json.code, 2);
  const parsed = JSON.parse(json.out) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(parsed.error).sort(), ['code', 'details', 'hint', 'message']);
  assert.equal(parsed.error.code, 'ERR_USAGE');
  assert.equal((await cli('--bogus-flag', 'ledger', 'head')).code, 2);
  assert.equal((await cli()).code, 2);
});

test('--help works at the top, on ledger and on each ledger subcommand', async () => {
  const top = await cli('--help');
  assert.equal(top.code, 0);
  assert.match(top.out, /cplane ledger/);
  const ledger = await cli('ledger', '--help');
  for (const sub of ['append', 'verify', 'query', 'tail', 'head', 'export', 'import', 'orphans']) {
    assert.match(ledger.out, new RegExp(`cplane ledger ${sub}`));
    const help = await cli('ledger', sub, '--help');
    assert.equal(help.code, 0, sub);
    assert.match(help.out, new RegExp(`cplane ledger ${sub}`));
    assert.match(help.out, /--root/);
    assert.match(help.out, /--ledger/);
  }
});

test('ledger redact refuses a --reason that quotes the secret it removes, which the REDACTED entry would keep for good', async (t) => {
  const dir = tempRoot(t);
  const file = join(dir, 'ledger.sqlite');
  const { Ledger } = await import('../../kernel/ledger/index.js');
  const ledger = Ledger.open(file, { create: true });
  const key = 'sk-live-9f8e7d6c5b4a';
  const email = 'jane.doe@example.org';
  const exchange = ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'SUCCESS',
    reason: 'ok',
    metadata: { session_id: 'S1' },
    content: { prompt: [`{"role":"user","content":"my API key is ${key}, mail ${email}"}`], response: ['ok'] },
  });
  ledger.close();
  for (const reason of [`removed ${key}`, `"${key}" pasted`, `PII: ${email}`]) {
    const refused = await cli(
      'ledger',
      'redact',
      '--ledger',
      file,
      '--exchange',
      exchange.id,
      '--reason',
      reason,
      '--json',
    );
    assert.equal(refused.code, 3, reason);
    const error = (JSON.parse(refused.out) as { error: { code: string; message: string; hint: string } }).error;
    assert.equal(error.code, 'ERR_LEDGER_REDACT_REASON_QUOTES', reason);
    assert.ok(!error.message.includes(key) && !error.message.includes(email), 'the refusal does not print it either');
  }
  assert.ok(readFileSync(file).includes(key), 'a refused redaction removed nothing');
  // Describing it is fine, even in words the block holds.
  const done = await cli(
    'ledger',
    'redact',
    '--ledger',
    file,
    '--exchange',
    exchange.id,
    '--reason',
    'my API key and mail pasted',
  );
  assert.equal(done.code, 0, done.err);
  assert.equal(readFileSync(file).includes(key), false);
  assert.equal(readFileSync(file).includes(email), false);
});

test('ledger redact: --dry-run lists the blocks and changes nothing; a redaction is recorded and verify still passes', async (t) => {
  const dir = tempRoot(t);
  const file = join(dir, 'ledger.sqlite');
  const { Ledger } = await import('../../kernel/ledger/index.js');
  const ledger = Ledger.open(file, { create: true });
  const exchange = ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'SUCCESS',
    reason: 'ok',
    metadata: { session_id: 'S1' },
    content: { prompt: ['{"messages":[', '{"role":"user","content":"key sk-live-0000"}', ']}'], response: ['ok'] },
  });
  const inline = ledger.append({ event_type: 'EXCHANGE', submission_id: 'C-1', decision: 'SUCCESS', reason: 'ok' });
  ledger.close();
  // The export carries the content once, as lines of its own; --text shows each exchange as a read does.
  const exported = (await cli('ledger', 'export', '--ledger', file)).out;
  assert.match(exported, /^\{"content_block":/m);
  const asText = (await cli('ledger', 'export', '--ledger', file, '--text')).out.trim().split('\n');
  assert.equal(asText.length, 2);
  assert.equal(
    (JSON.parse(asText[0] as string) as { metadata: { prompt: string } }).metadata.prompt,
    '{"messages":[{"role":"user","content":"key sk-live-0000"}]}',
  );
  assert.equal((await cli('ledger', 'export', '--ledger', file, '--text', '--out', join(dir, 'x'))).code, 2);
  const before = readFileSync(file);
  const dry = await cli('ledger', 'redact', '--ledger', file, '--exchange', exchange.id, '--dry-run', '--json');
  assert.equal(dry.code, 0, dry.err);
  const listed = JSON.parse(dry.out) as { blocks: { digest: string; preview: string }[] };
  assert.equal(listed.blocks.length, 4);
  const secret = listed.blocks.find((b) => b.preview.includes('sk-live-0000'));
  assert.ok(secret);
  assert.ok(readFileSync(file).equals(before), 'a dry run writes nothing');
  for (const args of [[], ['--exchange', exchange.id, '--session', 'S1'], ['--block', 'nothex']]) {
    const r = await cli('ledger', 'redact', '--ledger', file, '--reason', 'x', ...args);
    assert.equal(r.code, 2, args.join(' '));
  }
  assert.equal((await cli('ledger', 'redact', '--ledger', file, '--exchange', exchange.id)).code, 2, 'no reason');
  const refusedInline = await cli('ledger', 'redact', '--ledger', file, '--exchange', inline.id, '--reason', 'x');
  assert.equal(refusedInline.code, 3);
  assert.match(refusedInline.err, /ERR_LEDGER_REDACT_INLINE/);
  const missing = await cli('ledger', 'redact', '--ledger', file, '--exchange', 'LED-ffffffff', '--reason', 'x');
  assert.match(missing.err, /ERR_LEDGER_REDACT_NOT_FOUND/);
  // A ledger that never stored content has no block to name: a coded refusal, not a SQLite error.
  const plain = join(dir, 'plain.sqlite');
  assert.equal((await cli('ledger', 'append', '--ledger', plain, ...APPEND)).code, 0);
  const none = await cli('ledger', 'redact', '--ledger', plain, '--block', 'a'.repeat(64), '--reason', 'x');
  assert.equal(none.code, 3, none.err);
  assert.match(none.err, /ERR_LEDGER_REDACT_NOT_FOUND/);
  const done = await cli(
    'ledger',
    'redact',
    '--ledger',
    file,
    '--block',
    secret.digest,
    '--reason',
    'pasted key',
    '--json',
  );
  assert.equal(done.code, 0, done.err);
  const result = JSON.parse(done.out) as { entry_id: string; redacted: number; checkpointed: boolean };
  assert.equal(result.redacted, 1);
  assert.equal(result.checkpointed, true);
  assert.equal(readFileSync(file).includes('sk-live-0000'), false);
  const verify = await cli('ledger', 'verify', '--ledger', file);
  assert.equal(verify.code, 0, verify.out + verify.err);
  assert.match(verify.out, /content: 4 blocks \(1 redacted\)/);
  const query = JSON.parse((await cli('ledger', 'query', '--ledger', file, '--session', 'S1', '--json')).out) as {
    metadata: { prompt: string };
  }[];
  assert.equal(query[0]?.metadata.prompt, `{"messages":[[REDACTED:${result.entry_id}]]}`);
  // A REDACTED entry appended by hand, naming a block whose text is then removed behind the command's back, would
  // account for that removal: only the command writes one.
  const other = listed.blocks.find((b) => b !== secret) as { digest: string };
  const forged = await cli(
    'ledger',
    'append',
    '--ledger',
    file,
    '--event-type',
    'REDACTED',
    '--submission-id',
    'LEDGER',
    '--decision',
    'REDACTED',
    '--reason',
    'x',
    '--metadata',
    JSON.stringify({ blocks: [other.digest], by: 'someone', exchanges: [] }),
  );
  assert.equal(forged.code, 3, forged.out);
  assert.match(forged.err, /ERR_LEDGER_ENTRY_INVALID: a REDACTED entry is written only by `cplane ledger redact`/);
  const after = JSON.parse((await cli('ledger', 'query', '--ledger', file, '--event-type', 'REDACTED', '--json')).out);
  assert.equal((after as unknown[]).length, 1, 'nothing was appended');
});

test('ledger export into a pipe its reader closes early ends quietly with exit 0, not a crash on EPIPE', async (t) => {
  const dir = tempRoot(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  // Far more than a pipe's buffer, so writes go on after the reader has gone.
  ledger.appendBatch(
    Array.from({ length: 4000 }, (_, i) => ({
      event_type: 'TEST',
      submission_id: `S-${i}`,
      decision: 'OK',
      reason: 'x'.repeat(200),
    })),
  );
  ledger.close();
  const main = new URL('../../cli/main.js', import.meta.url).href;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { runCli } = await import(${JSON.stringify(main)}); process.exitCode = await runCli({ argv: process.argv.slice(1) });`,
      'ledger',
      'export',
      '--ledger',
      path,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // The reader takes the first chunk and goes away, as `| head -1` does.
  child.stdout.once('data', () => child.stdout.destroy());
  const [code] = (await once(child, 'close')) as [number | null];
  assert.equal(stderr, '');
  assert.equal(code, 0);
});
