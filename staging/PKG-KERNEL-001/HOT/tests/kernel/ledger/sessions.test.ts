import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  type AppendInput,
  Ledger,
  listSessions,
  MAX_TURN_PAGE_CHARS,
  sessionTurns,
} from '../../../kernel/ledger/index.js';
import { tempDir } from './helpers.js';

/** One EXCHANGE of `session` whose prompt is `turns` messages long, then its settlement, as the router writes them. */
function call(session: string, agent: string, turns: number, cost: number): AppendInput[] {
  const pieces = ['{"messages":['];
  for (let i = 0; i < turns; i += 1) pieces.push(`${i > 0 ? ',' : ''}{"role":"user","content":"${session} m${i}"}`);
  pieces.push(']}');
  return [
    {
      event_type: 'EXCHANGE',
      submission_id: 'anthropic.messages',
      decision: turns === 3 && session === 'S2' ? 'ERROR' : 'SUCCESS',
      reason: 'r',
      metadata: {
        session_id: session,
        agent_id: agent,
        input_tokens: 100,
        cache_read_tokens: 60,
        cache_write_tokens: 10,
        output_tokens: 5,
      },
      content: { prompt: pieces, response: [`answer ${turns}`] },
    },
    {
      event_type: 'BUDGET_SETTLED',
      submission_id: `req-${session}-${turns}`,
      decision: 'SETTLED',
      reason: 'r',
      metadata: { session_id: session, agent_id: agent, cost },
    },
  ];
}

test('sessions page newest activity first; the cursor never repeats or skips a session; filters hold', (t) => {
  const ledger = Ledger.open(join(tempDir(t), 'ledger.sqlite'), { create: true });
  t.after(() => ledger.close());
  // Interleaved: S1..S5 take turns, S1 comes back last.
  for (let turn = 1; turn <= 3; turn += 1)
    for (const s of ['S1', 'S2', 'S3', 'S4', 'S5']) ledger.appendBatch(call(s, s === 'S4' ? 'B' : 'A', turn, 0.5));
  ledger.appendBatch(call('S1', 'A', 4, 0.25));
  const seen: string[] = [];
  let before: number | undefined;
  for (;;) {
    const page = listSessions(ledger, { limit: 2, ...(before === undefined ? {} : { before }) });
    seen.push(...page.sessions.map((s) => s.session_id));
    if (page.next_before === null) break;
    before = page.next_before;
  }
  assert.deepEqual(seen, ['S1', 'S5', 'S4', 'S3', 'S2']);
  const [s1] = listSessions(ledger, { limit: 1 }).sessions;
  assert.equal(s1?.requests, 4);
  assert.equal(s1?.input_tokens, 400);
  assert.equal(s1?.cache_hit_share, 0.6);
  assert.equal(s1?.cost, 1.75);
  assert.deepEqual(s1?.agents, ['A']);
  assert.equal(listSessions(ledger, { limit: 5 }).sessions.find((s) => s.session_id === 'S2')?.errors, 1);
  assert.deepEqual(
    listSessions(ledger, { agent: 'B' }).sessions.map((s) => s.session_id),
    ['S4'],
  );
  const future = listSessions(ledger, { since: '2999-01-01T00:00:00.000Z' });
  assert.deepEqual(future.sessions, []);
});

test("a session's turns show only what each added; a page starting mid-session still does", (t) => {
  const ledger = Ledger.open(join(tempDir(t), 'ledger.sqlite'), { create: true });
  t.after(() => ledger.close());
  for (let turn = 1; turn <= 4; turn += 1) ledger.appendBatch(call('S1', 'A', turn, 0.5));
  const all = sessionTurns(ledger, 'S1');
  assert.equal(all.turns.length, 4);
  assert.equal(all.turns[0]?.continues, false);
  assert.deepEqual(all.turns[0]?.prompt_new, ['{"messages":[', '{"role":"user","content":"S1 m0"}', ']}']);
  assert.equal(all.turns[2]?.continues, true);
  assert.deepEqual(all.turns[2]?.prompt_new, [',{"role":"user","content":"S1 m2"}', ']}']);
  assert.equal(all.turns[2]?.cost, 0.5);
  assert.equal(all.turns[3]?.response, 'answer 4');
  // The whole prompt is the first turn's, then each turn's less the closing piece, plus what it added.
  let prompt: string[] = [];
  for (const turn of all.turns)
    prompt = turn.continues ? [...prompt.slice(0, -1), ...turn.prompt_new] : turn.prompt_new;
  assert.equal(prompt.join(''), ledger.get(all.turns[3]?.id as string)?.metadata.prompt);
  const page = sessionTurns(ledger, 'S1', { after: all.turns[1]?.seq as number, limit: 1 });
  assert.deepEqual(page.turns[0]?.prompt_new, all.turns[2]?.prompt_new);
  assert.equal(page.next_after, all.turns[2]?.seq);
});

test("a page of a session's turns ends once it holds MAX_TURN_PAGE_CHARS of text; paging still reads every turn once", (t) => {
  const ledger = Ledger.open(join(tempDir(t), 'ledger.sqlite'), { create: true });
  t.after(() => ledger.close());
  // A client whose every call is near the body limit: ten turns of a fifth of the page's text each.
  const size = Math.ceil(MAX_TURN_PAGE_CHARS / 5);
  for (let turn = 1; turn <= 10; turn += 1) {
    const [exchange, settled] = call('BIG', 'A', 1, 0.1) as [AppendInput, AppendInput];
    ledger.appendBatch([
      { ...exchange, content: { prompt: [`{"q":${turn}}`], response: [`${turn}`.padEnd(size, 'x')] } },
      settled,
    ]);
  }
  const seen: string[] = [];
  let after: number | undefined;
  let pages = 0;
  for (;;) {
    const page = sessionTurns(ledger, 'BIG', { limit: 200, ...(after === undefined ? {} : { after }) });
    pages += 1;
    const chars = page.turns.reduce((n, x) => n + x.response.length + x.prompt_new.join('').length, 0);
    assert.ok(page.turns.length > 0, 'a page holds at least one turn');
    assert.ok(chars < MAX_TURN_PAGE_CHARS + size + 100, `page ${pages} holds ${chars} characters`);
    seen.push(...page.turns.map((x) => x.response.slice(0, 2)));
    if (page.next_after === null) break;
    assert.equal(page.next_after, page.turns[page.turns.length - 1]?.seq, 'the next page starts after this one');
    after = page.next_after;
  }
  assert.ok(pages > 1, 'the turns did not fit one page');
  assert.deepEqual(
    seen,
    Array.from({ length: 10 }, (_, i) => `${i + 1}`.padEnd(2, 'x')),
  );
});
