// One console contract, both stores: the same history appended (same clock, same ids, so the same hashes) to a
// SQLite ledger and to a PostgreSQL one gives deep-equal console views: sessions pages and their cursors and
// filters, a session's turns page by page, every exchange (a redacted block included), the plots' spend and
// latency, the breakers' recent failures and the root view's head and verify. Metadata holding U+0000 is in the
// history: PostgreSQL cannot read such a row as json, and the console must not choke on it. Without PostgreSQL
// installed the suite prints one SKIP line (in CI, where .ci/run installs it, a missing server fails).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { AppendInput, IdSource } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import type { Ledger as LedgerT } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js';
import type { PgLedger as PgLedgerT } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js';
import type { ConsoleData } from '../../staging/PKG-GATEWAY-001/HOT/gateway/console/data.js';

const { Ledger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js')>(
    'HOT/kernel/ledger/ledger.js',
  );
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { blockDigest } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/content.js')>(
    'HOT/kernel/ledger/content.js',
  );
const { SqliteConsoleData } = await fromDevRoot<
  typeof import('../../staging/PKG-GATEWAY-001/HOT/gateway/console/sqlite-data.js')
>('HOT/gateway/console/sqlite-data.js');
const { PgConsoleData } = await fromDevRoot<
  typeof import('../../staging/PKG-GATEWAY-001/HOT/gateway/console/pg-data.js')
>('HOT/gateway/console/pg-data.js');

const skip = pgSkip();

const fixedClockAndIds = (stepMs: number): { clock: () => number; idSource: IdSource } => {
  let t = Date.parse('2026-01-01T10:00:00.000Z');
  return { clock: () => (t += stepMs), idSource: (seq) => `LED-${(0xabc00000 + seq).toString(16)}` };
};

const SECRET_ANSWER = 'answer with a secret: hunter2';

/** A call as the router records it: its EXCHANGE and, in the same batch, its settlement (cost in the budget's currency). */
function call(
  session: string,
  agent: string,
  turn: number,
  options: {
    cost?: number | null;
    fail?: boolean;
    latency?: number;
    answer?: string;
    note?: string;
    /** A routed call: the deployments its attempts went to, the last one serving. */
    routed?: string[];
  } = {},
): AppendInput[] {
  const pieces = ['{"system":"be brief","messages":['];
  for (let i = 0; i <= turn; i += 1) pieces.push(`${i > 0 ? ',' : ''}{"role":"user","content":"${session} m${i}"}`);
  pieces.push(']}');
  const fail = options.fail === true;
  const exchange: AppendInput = {
    event_type: 'EXCHANGE',
    submission_id: 'anthropic.messages',
    decision: fail ? 'ERROR' : 'SUCCESS',
    reason: fail ? 'upstream refused' : 'Exchange completed',
    metadata: {
      session_id: session,
      agent_id: agent,
      model_id: 'claude-sonnet-4-5',
      input_tokens: 100 + turn,
      cache_read_tokens: 10 * turn,
      cache_write_tokens: turn === 0 ? 50 : 0,
      output_tokens: 7 + turn,
      latency_ms: options.latency ?? 120 * (turn + 1),
      outcome: fail ? 'upstream_error' : 'success',
      ...(fail ? { error_code: 'ERR_UPSTREAM_400', error_message: 'the upstream said \u0000 bad' } : {}),
      ...(options.note === undefined ? {} : { note: options.note }),
      ...(options.routed === undefined ? {} : routedMetadata(options.routed)),
    },
    content: { prompt: pieces, response: [options.answer ?? `answer ${session} ${turn}`] },
  };
  if (options.cost === undefined) return [exchange];
  return [
    exchange,
    {
      event_type: 'BUDGET_SETTLED',
      submission_id: `req-${session}-${turn}`,
      decision: 'SETTLED',
      reason: 'settled',
      metadata: { session_id: session, agent_id: agent, cost: options.cost, note: 'nul \u0000 in a settlement' },
    },
  ];
}

/** What a routed EXCHANGE adds (router/records.ts, gateway/call.ts): the alias, who served, every attempt. */
function routedMetadata(deployments: string[]): Record<string, unknown> {
  return {
    model_alias: 'duo',
    served_by: `${deployments.at(-1)}/claude-sonnet-4-5`,
    attempts: deployments.map((deployment, i) => ({
      attempt: i + 1,
      deployment,
      kind: i === deployments.length - 1 ? null : 'overloaded',
      latency_ms: 10 + i,
      model: 'claude-sonnet-4-5',
      outcome: i === deployments.length - 1 ? 'success' : 'error',
      provider: 'anthropic',
      retry_after_ms: null,
      status: i === deployments.length - 1 ? null : 529,
      upstream_request_id: `req_${deployment}_${i}`,
    })),
  };
}

/** The history both stores receive, batch by batch. */
const HISTORY: AppendInput[][] = [
  [{ event_type: 'NOTE', submission_id: 'boot', decision: 'OK', reason: 'start', metadata: { n: 0 } }],
  call('SES-A', 'AGENT-1', 0, { cost: 0.1 }),
  call('SES-B', 'AGENT-2', 0, { cost: 0.2, note: 'a \u0000 in an exchange' }),
  call('SES-A', 'AGENT-1', 1, { cost: 0.3, answer: SECRET_ANSWER }),
  call('SES-C', 'AGENT-1', 0, { cost: null, fail: true, latency: 45_000 }),
  call('SES-B', 'AGENT-1', 1, { cost: 0.000123 }),
  call('SES-A', 'AGENT-1', 2, { cost: 0.7 }),
  call('SES-D', 'AGENT-3', 0, { routed: ['first', 'second'] }),
  call('SES-E', 'AGENT-2', 0, { cost: 2, latency: 99_000, routed: ['first'] }),
  call('SES-C', 'AGENT-1', 1, { cost: 1e-7, fail: true }),
  call('SES-A', 'AGENT-1', 3, { cost: 0.1 }),
  [{ event_type: 'NOTE', submission_id: 'end', decision: 'OK', reason: 'done', metadata: { text: 'x\u0000y' } }],
];

const REDACTION = { reason: 'a secret in an answer', by: 'ops@example' };

interface Side {
  data: ConsoleData;
  close(): Promise<void>;
}

let server: PgServer | undefined;
let work = '';
let sqlite: Side;
let postgres: Side;
const exchangeIds: string[] = [];

before(async () => {
  if (skip !== false) return;
  work = mkdtempSync(join(tmpdir(), 'cp-console-contract-'));
  const root = join(work, 'root');
  mkdirSync(root);
  server = await startPgServer();
  const consoleClock = () => Date.parse('2026-02-01T00:00:00.000Z');

  const file: LedgerT = Ledger.open(join(work, 'ledger.sqlite'), { create: true, ...fixedClockAndIds(7 * 60_000) });
  const redactedExchanges: string[] = [];
  for (const batch of HISTORY) {
    const written = file.appendBatch(batch);
    for (const entry of written) {
      if (entry.event_type === 'EXCHANGE') exchangeIds.push(entry.id);
      if (entry.metadata.response === SECRET_ANSWER) redactedExchanges.push(entry.id);
    }
  }
  const secret = blockDigest(SECRET_ANSWER);
  file.redact([secret], { ...REDACTION, exchanges: redactedExchanges });
  sqlite = {
    data: new SqliteConsoleData({ root, ledger: file, breakers: () => [], clock: consoleClock }),
    close: async () => file.close(),
  };

  const url = await createDatabase(server, 'console_contract');
  const shared: PgLedgerT = await PgLedger.open(url, { create: true, ...fixedClockAndIds(7 * 60_000) });
  for (const batch of HISTORY) await shared.appendBatch(batch);
  // `ledger redact --store` is not in this tree: the same REDACTED entry, then the block emptied as it would empty
  // it (the only change the table's trigger allows).
  const record = await shared.append({
    event_type: 'REDACTED',
    submission_id: 'LEDGER',
    decision: 'REDACTED',
    reason: REDACTION.reason,
    metadata: { blocks: [secret], by: REDACTION.by, exchanges: redactedExchanges },
  });
  await shared.pool.query(
    'UPDATE cplane_content_blocks SET text = NULL, redacted_by = $1 WHERE digest = $2 AND text IS NOT NULL',
    [record.id, Buffer.from(secret, 'hex')],
  );
  postgres = {
    data: new PgConsoleData({
      root,
      ledger: shared,
      budget: { status: async () => assert.fail('budgets are not compared here') },
      breakers: () => [],
      clock: consoleClock,
    }),
    close: () => shared.close(),
  };
});

after(async () => {
  await sqlite?.close();
  await postgres?.close();
  server?.stop();
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

/** Both stores' answer to one read, asserted equal; the SQLite one is returned for further checks. */
async function same<T>(read: (data: ConsoleData) => Promise<T>): Promise<T> {
  const expected = await read(sqlite.data);
  assert.deepEqual(await read(postgres.data), expected);
  return expected;
}

describe('the console reads the same views on SQLite and PostgreSQL', { skip, concurrency: false }, () => {
  test('sessions: every page, cursor and filter', async () => {
    const all = await same((d) => d.sessions({}));
    assert.deepEqual(
      all.sessions.map((s) => s.session_id),
      ['SES-A', 'SES-C', 'SES-E', 'SES-D', 'SES-B'],
    );
    const a = all.sessions[0];
    assert.equal(a?.requests, 4);
    // SQLite's compensated sum: adding the prices one by one in doubles gives 1.2000000000000002.
    assert.equal(a?.cost, 1.2);
    const b = all.sessions.find((s) => s.session_id === 'SES-B');
    assert.deepEqual(b?.agents, ['AGENT-2', 'AGENT-1']);
    const c = all.sessions.find((s) => s.session_id === 'SES-C');
    assert.equal(c?.errors, 2);
    assert.equal(all.next_before, null);

    // Two at a time: the same pages and cursors, the same sessions in all.
    const paged: string[] = [];
    let before: number | undefined;
    for (let page = 0; page < 5; page += 1) {
      const query = { limit: 2, ...(before === undefined ? {} : { before }) };
      const got = await same((d) => d.sessions(query));
      paged.push(...got.sessions.map((s) => s.session_id));
      if (got.next_before === null) break;
      before = got.next_before;
    }
    assert.deepEqual(
      paged,
      all.sessions.map((s) => s.session_id),
    );

    const byAgent = await same((d) => d.sessions({ agent: 'AGENT-1', limit: 2 }));
    assert.equal(byAgent.sessions.length, 2);
    assert.notEqual(byAgent.next_before, null);
    await same((d) => d.sessions({ agent: 'AGENT-1', before: byAgent.next_before as number }));
    const window = await same((d) =>
      d.sessions({ since: '2026-01-01T10:20:00.000Z', until: '2026-01-01T11:00:00.000Z' }),
    );
    assert.ok(window.sessions.length > 0 && window.sessions.length < all.sessions.length);
    await same((d) => d.sessions({ since: '2026-01-01T10:20:00.000Z', limit: 1, before: 20 }));
    await same((d) => d.sessions({ agent: 'NOBODY' }));
  });

  test("a session's turns, page by page, with the redacted answer marked", async () => {
    const whole = await same((d) => d.session('SES-A', {}));
    assert.equal(whole.turns.length, 4);
    assert.equal(whole.turns[1]?.continues, true);
    assert.deepEqual(whole.turns[2]?.prompt_new, [',{"role":"user","content":"SES-A m2"}', ']}']);
    // Read as a conversation, the continuing turn adds one message and no punctuation.
    assert.deepEqual(whole.turns[2]?.conversation, [
      { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'SES-A m2' }] },
    ]);
    assert.match(whole.turns[1]?.response ?? '', /^\[REDACTED:LED-/);
    assert.equal(whole.turns[1]?.redacted_by.length, 1);
    assert.equal(whole.turns[0]?.cost, 0.1);
    let after: number | undefined;
    const turns: number[] = [];
    for (let page = 0; page < 5; page += 1) {
      const options = { limit: 1, ...(after === undefined ? {} : { after }) };
      const got = await same((d) => d.session('SES-A', options));
      turns.push(...got.turns.map((t) => t.seq));
      if (got.next_after === null) break;
      after = got.next_after;
    }
    assert.deepEqual(
      turns,
      whole.turns.map((t) => t.seq),
    );
    const failed = await same((d) => d.session('SES-C', {}));
    assert.equal(failed.turns[0]?.metadata.error_message, 'the upstream said \u0000 bad');
    assert.equal(failed.turns[0]?.cost, null);
    await same((d) => d.session('SES-NONE', {}));
  });

  test('every exchange, a redacted one and a failed one included; an id that is no EXCHANGE is null', async () => {
    assert.equal(exchangeIds.length, 10);
    let redacted = 0;
    for (const id of exchangeIds) {
      const view = await same((d) => d.exchange(id));
      if (view?.redacted_by.length) redacted += 1;
    }
    assert.equal(redacted, 1);
    assert.equal(await same((d) => d.exchange('LED-abc00001')), null);
    assert.equal(await same((d) => d.exchange('LED-00000000')), null);
  });

  test('plots, recent failures and the root view (head and verify)', async () => {
    const plots = await same((d) => d.plots());
    assert.ok(plots.spend.length >= 2, 'the settlements span several hours');
    assert.ok(plots.latency.some((b) => b.le_ms === null && b.count === 1));
    assert.deepEqual(plots.fallbacks, [{ alias: 'duo', calls: 2, fallbacks: 1, rate: 0.5 }]);
    const breakers = await same((d) => d.breakers());
    assert.deepEqual(
      breakers.recent_failures.map((f) => [f.session_id, f.error_code, f.outcome]),
      [
        ['SES-C', 'ERR_UPSTREAM_400', 'upstream_error'],
        ['SES-C', 'ERR_UPSTREAM_400', 'upstream_error'],
      ],
    );
    const root = await same((d) => d.rootView({ verify: true }));
    assert.equal(root.ledger.head.seq, 22);
    assert.equal(root.ledger.verify?.ok, true);
    assert.equal(root.ledger.verify?.redacted_blocks, 1);
    await same((d) => d.rootView());
    // "verify now" asked again while a walk of the whole chain runs joins it: repeating it starts no more walks.
    for (const data of [sqlite.data, postgres.data]) {
      const running = data.verify();
      assert.equal(data.verify(), running);
      assert.equal((await running).ok, true);
    }
  });
});
