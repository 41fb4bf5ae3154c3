// A root whose store is PostgreSQL (`cplane config set gateway.store URL`): gate-check's G4 verifies the chain
// there and the root's signed checkpoints against it (and fails, naming the entry, when one is edited inside the
// database), G6 links its dispatches; `route` appends to that chain and leaves the SQLite ledger alone; `status`
// and `budget status` report the PostgreSQL numbers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { cli } from '../gateway/harness.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);

const skip = pgSkip();
const havePg = skip === false;

interface Gate {
  id: string;
  status: string;
  message: string;
  findings: { code: string; message: string }[];
}
interface BudgetStatus {
  db_path: string;
  pending_reservations: number;
  scopes: { scope: string; scope_id: string; requests: number; settled_tokens: number }[];
}

let server: PgServer | undefined;
let work: string;
let root: string;
let url: string;
/** What the root's own SQLite files said before it moved to PostgreSQL. */
let sqliteHead: { seq: number; hash: string };
let sqliteBudget: BudgetStatus;

// No CPLANE_DATABASE_URL from the caller's shell: the root's config is what names the store here.
const run = (args: string[]) => cli(args, { CPLANE_DATABASE_URL: '' });

function gates(ids: string[], extra: string[] = []): { status: number | null; gates: Gate[]; stderr: string } {
  const r = run(['gate-check', '--root', root, '--gate', ...ids, '--json', ...extra]);
  return { status: r.status, gates: (JSON.parse(r.stdout) as { gates: Gate[] }).gates, stderr: r.stderr };
}

async function pgHead(): Promise<{ seq: number; hash: string }> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query('SELECT seq, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1');
    const row = rows[0] as { seq: string; entry_hash: string };
    return { seq: Number(row.seq), hash: row.entry_hash };
  } finally {
    await db.end();
  }
}

before(async () => {
  if (!havePg) return;
  work = mkdtempSync(join(tmpdir(), 'cp-on-store-'));
  root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  for (const prompt of ['hello', 'hello again']) {
    const r = run(['route', '--root', root, '--prompt', prompt, '--dev', '--session', 'SES-S']);
    assert.equal(r.status, 0, r.stderr);
  }
  sqliteHead = JSON.parse(run(['ledger', 'head', '--root', root, '--json']).stdout) as typeof sqliteHead;
  sqliteBudget = JSON.parse(run(['budget', 'status', '--root', root, '--json']).stdout) as BudgetStatus;
  server = await startPgServer();
  url = await createDatabase(server, 'onstore');
  const migrated = run(['ledger', 'migrate', '--root', root, '--to', url]);
  assert.equal(migrated.status, 0, migrated.stderr);
  const set = run(['config', 'set', 'gateway.store', url, '--root', root]);
  assert.equal(set.status, 0, set.stderr);
});
after(() => {
  server?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

test('G4 verifies the PostgreSQL chain and the root checkpoints against it; G6 links its dispatches', { skip }, () => {
  const r = gates(['G4', 'G6']);
  assert.equal(r.status, 0, JSON.stringify(r.gates));
  const [g4, g6] = r.gates as [Gate, Gate];
  assert.equal(g4.status, 'PASS', g4.message);
  assert.match(g4.message, /^postgres: \d+ entries verified up to #\d+/);
  // The root's SQLite file still takes this host's governance records (the config change above): checked too.
  assert.match(g4.message, /\(the root's SQLite file: \d+\)/);
  assert.match(g4.message, /checkpoint\(s\) match/);
  assert.equal(g6.status, 'PASS', g6.message);
  assert.match(g6.message, /^2 exchanges linked/);
});

test('route on the store appends to the PostgreSQL chain; status and budget status show its numbers', {
  skip,
}, async () => {
  const before = await pgHead();
  assert.deepEqual(before, sqliteHead, 'the migration copied the chain as it was');
  // `config set` recorded its change in the root's SQLite ledger after the migration: that is its head now.
  const localBefore = JSON.parse(run(['ledger', 'head', '--root', root, '--json']).stdout) as typeof sqliteHead;
  const r = run(['route', '--root', root, '--store', url, '--dev', '--prompt', 'hi', '--session', 'SES-S']);
  assert.equal(r.status, 0, r.stderr);
  const after = await pgHead();
  assert.ok(after.seq > before.seq, `the PostgreSQL head moved (${before.seq} -> ${after.seq})`);
  const shown = run(['ledger', 'head', '--store', url, '--json']);
  assert.equal(shown.status, 0, shown.stderr);
  assert.deepEqual(JSON.parse(shown.stdout), after);
  // A checkpoint signed now of the PostgreSQL chain (not of the file, whose chain has moved on since the migration).
  const signed = run(['ledger', 'checkpoint', '--root', root, '--store', url, '--json']);
  assert.equal(signed.status, 0, signed.stderr);
  const cp = (JSON.parse(signed.stdout) as { checkpoint: { seq: number; hash: string } }).checkpoint;
  assert.deepEqual({ seq: cp.seq, hash: cp.hash }, after);
  // The entries there, through the same commands as the file's: the newest, and the session's exchange.
  const tail = run(['ledger', 'tail', '--store', url, '-n', '2', '--json']);
  assert.equal(tail.status, 0, tail.stderr);
  const newest = JSON.parse(tail.stdout) as { entry_hash: string }[];
  assert.equal(newest.length, 2);
  assert.equal(newest[1]?.entry_hash, after.hash, 'tail is in chain order, the head last');
  type Found = { metadata: { session_id: string; prompt?: unknown } }[];
  const sessionQuery = ['ledger', 'query', '--session', 'SES-S', '--event-type', 'EXCHANGE', '--json'];
  const found = run([...sessionQuery, '--store', url]);
  assert.equal(found.status, 0, found.stderr);
  const exchanges = JSON.parse(found.stdout) as Found;
  // The migrated ones, which the root's file still holds, and the one just routed, newest first.
  const migrated = JSON.parse(run([...sessionQuery, '--root', root]).stdout) as Found;
  assert.equal(exchanges.length, migrated.length + 1);
  assert.deepEqual(exchanges.slice(1), migrated);
  assert.equal(exchanges[0]?.metadata.session_id, 'SES-S');
  assert.match(String(exchanges[0]?.metadata.prompt), /hi/, 'read with its content');
  const refused = run(['ledger', 'query', '--store', url, '--since', 'not a time']);
  assert.equal(refused.status === 0, false);
  assert.match(refused.stderr, /ERR_LEDGER_QUERY_INVALID/);
  const local = JSON.parse(run(['ledger', 'head', '--root', root, '--json']).stdout) as typeof sqliteHead;
  assert.deepEqual(local, localBefore, 'the SQLite ledger was not written');

  const status = run(['status', '--root', root, '--json']);
  assert.equal(status.status, 0, status.stderr);
  const s = JSON.parse(status.stdout) as { ledger_head: typeof after; store: string };
  assert.deepEqual([s.store, s.ledger_head], ['postgres', after]);

  const budget = run(['budget', 'status', '--root', root, '--session', 'SES-S', '--json']);
  assert.equal(budget.status, 0, budget.stderr);
  const b = JSON.parse(budget.stdout) as BudgetStatus;
  assert.equal(b.db_path, url);
  assert.equal(b.pending_reservations, 0);
  const session = b.scopes.find((x) => x.scope === 'session');
  const before_ = sqliteBudget.scopes.find((x) => x.scope === 'session' && x.scope_id === 'SES-S');
  assert.ok(session && before_, JSON.stringify({ b, sqliteBudget }));
  // The migrated totals and the route made on PostgreSQL: one request more than the SQLite file holds.
  assert.equal(session.requests, before_.requests + 1);
  assert.ok(session.settled_tokens > before_.settled_tokens);

  // The new exchange is G6's too, and the chain still verifies.
  const g = gates(['G4', 'G6']);
  assert.equal(g.status, 0, JSON.stringify(g.gates));
  assert.match((g.gates[1] as Gate).message, /^3 exchanges linked/);
});

test('a redaction on the store (ledger redact --store) keeps G4 passing and reads show its marker', { skip }, () => {
  const session = ['ledger', 'query', '--store', url, '--session', 'SES-S', '--event-type', 'EXCHANGE', '--json'];
  const [newest] = JSON.parse(run(session).stdout) as { id: string; metadata: { prompt: string } }[];
  assert.ok(newest, 'no exchange on the store');
  const preview = run(['ledger', 'redact', '--store', url, '--exchange', newest.id, '--dry-run', '--json']);
  assert.equal(preview.status, 0, preview.stderr);
  const { blocks } = JSON.parse(preview.stdout) as { blocks: { digest: string; preview: string | null }[] };
  const hi = blocks.find((b) => b.preview?.includes('hi'));
  assert.ok(hi, preview.stdout);
  const r = run(['ledger', 'redact', '--store', url, '--block', hi.digest, '--reason', 'test', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const { entry_id } = JSON.parse(r.stdout) as { entry_id: string };
  const [after] = JSON.parse(run(session).stdout) as { metadata: { prompt: string } }[];
  assert.ok(after?.metadata.prompt.includes(`[REDACTED:${entry_id}]`), after?.metadata.prompt);
  const g = gates(['G4']);
  assert.equal(g.status, 0, JSON.stringify(g.gates));
  assert.equal((g.gates[0] as Gate).status, 'PASS');
});

test('a DISPATCH without its EXCHANGE in PostgreSQL is an orphan for G6, though the SQLite ledger has none', {
  skip,
}, async () => {
  const store = await PgLedger.open(url);
  let id: string;
  try {
    const dispatch = await store.append({
      event_type: 'DISPATCH',
      submission_id: 'PRC-LOST',
      decision: 'DISPATCHED',
      reason: 'Dispatching to mock/m1',
      metadata: { contract_id: 'PRC-LOST', agent_id: 'AGENT-LOST', session_id: 'SES-LOST' },
    });
    id = dispatch.id;
  } finally {
    await store.close();
  }
  // Any age is past a zero timeout: the dispatch is an orphan now rather than in ten minutes.
  const r = gates(['G6'], ['--orphan-timeout-ms', '0']);
  assert.equal(r.status, 1, JSON.stringify(r.gates));
  const orphans = (r.gates[0] as Gate).findings.filter((f) => f.code === 'ORPHAN_DISPATCH');
  assert.deepEqual(
    orphans.map((f) => f.message.split(' ')[1]),
    [id],
  );
});

test('an entry edited inside PostgreSQL makes G4 fail and names it', { skip }, async () => {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let id: string;
  try {
    // As an attacker with the database would: the trigger dropped, a reason rewritten, the trigger put back.
    await db.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
    const { rows } = await db.query(
      "UPDATE cplane_entries SET reason = convert_to('approved by nobody', 'UTF8') WHERE seq = 2 RETURNING id",
    );
    await db.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
    id = (rows[0] as { id: string }).id;
  } finally {
    await db.end();
  }
  const r = gates(['G4']);
  assert.equal(r.status, 1, r.stderr);
  const g4 = r.gates[0] as Gate;
  assert.equal(g4.status, 'FAIL');
  const edited = g4.findings.find((f) => f.code === 'LEDGER_EDITED');
  assert.ok(edited, JSON.stringify(g4.findings));
  assert.match(edited.message, new RegExp(`^${id}: `));
});
