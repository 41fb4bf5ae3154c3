// A budget step reads each scope row once and writes what it added and put in one statement when it ends
// (budgeter/step-rows.ts): within the step every read sees the step's own changes, a step that throws leaves the
// file as it was, and outside a step each call reads and writes the file at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BudgetStore, scopeKeyOf } from '../../budgeter/store.js';
import { tempDir } from './helpers.js';

const session = scopeKeyOf('session', 'S1', '', '');
const agent = scopeKeyOf('agent', 'S1', '', 'A');
const window = { window_start: 60_000, requests: 2, tokens: 300 };

function openStore(t: import('node:test').TestContext): { store: BudgetStore; path: string } {
  const path = join(tempDir(t), 'budget.sqlite');
  const store = BudgetStore.open(path, { synchronous: 'NORMAL', busyTimeoutMs: 1000 });
  t.after(() => store.close());
  return { store, path };
}

/** The rows as another process sees them once the step committed. */
function fileRows(t: import('node:test').TestContext, path: string): unknown[] {
  const db = new Database(path, { readonly: true });
  t.after(() => db.close());
  return db
    .prepare(
      `SELECT scope, counted, reserved_tokens, settled_tokens, requests, window_start, window_requests, window_tokens
       FROM scope_rows ORDER BY scope`,
    )
    .all();
}

test('within a step, reads see what the step added and put; the file gets the sums once it commits', (t) => {
  const { store, path } = openStore(t);
  store.immediate(() => store.addTotals([session], { reserved_tokens: 100, requests: 1 }));
  store.immediate(() => {
    assert.equal(store.totals([session])[0]?.reserved_tokens, 100);
    store.addTotals([session, agent], { reserved_tokens: 50, requests: 1 });
    // A scope named twice in one call is added twice, as the same delta added in two calls.
    store.addTotals([agent, agent], { settled_tokens: 7 });
    const [s, a] = store.totals([session, agent]);
    assert.equal(s?.reserved_tokens, 150);
    assert.equal(s?.requests, 2);
    assert.equal(a?.reserved_tokens, 50);
    assert.equal(a?.settled_tokens, 14);
    assert.equal(store.window(session), undefined);
    store.putWindow(session, window);
    assert.deepEqual(store.window(session), window);
    // Written part-way (as before a step's records go to its ledger): nothing is written twice.
    store.writeStep();
    // Totals added after the window was put keep it.
    store.addTotals([session], { settled_tokens: 1 });
    assert.deepEqual(store.window(session), window);
  });
  assert.deepEqual(fileRows(t, path), [
    {
      scope: agent.scope,
      counted: 1,
      reserved_tokens: 50,
      settled_tokens: 14,
      requests: 1,
      window_start: null,
      window_requests: null,
      window_tokens: null,
    },
    {
      scope: session.scope,
      counted: 1,
      reserved_tokens: 150,
      settled_tokens: 1,
      requests: 2,
      window_start: 60_000,
      window_requests: 2,
      window_tokens: 300,
    },
  ]);
});

test('a row added to before it is read reads as the file plus what was added; a window alone stays uncounted', (t) => {
  const { store, path } = openStore(t);
  store.immediate(() => store.addTotals([session], { reserved_tokens: 10 }));
  store.immediate(() => {
    store.addTotals([session], { reserved_tokens: 5 });
    store.putWindow(agent, window);
    assert.equal(store.totals([session])[0]?.reserved_tokens, 15);
    assert.equal(store.totals([agent])[0]?.reserved_tokens, 0);
    assert.deepEqual(store.window(agent), window);
  });
  const rows = fileRows(t, path) as { scope: string; counted: number; reserved_tokens: number }[];
  assert.deepEqual(
    rows.map((r) => [r.scope, r.counted, r.reserved_tokens]),
    [
      [agent.scope, 0, 0],
      [session.scope, 1, 15],
    ],
  );
});

test('a step that throws leaves the file and the next step as if it never ran', (t) => {
  const { store, path } = openStore(t);
  store.immediate(() => store.addTotals([session], { reserved_tokens: 10 }));
  assert.throws(
    () =>
      store.immediate(() => {
        store.addTotals([session], { reserved_tokens: 1000 });
        store.putWindow(session, window);
        throw new Error('refused mid-step');
      }),
    /refused mid-step/,
  );
  store.immediate(() => {
    assert.equal(store.totals([session])[0]?.reserved_tokens, 10);
    assert.equal(store.window(session), undefined);
  });
  assert.equal((fileRows(t, path)[0] as { reserved_tokens: number }).reserved_tokens, 10);
});

test('outside a step each write reaches the file at once and each read reads the file', (t) => {
  const { store, path } = openStore(t);
  store.addTotals([session], { requests: 1 });
  store.putWindow(session, window);
  assert.equal((fileRows(t, path)[0] as { requests: number }).requests, 1);
  store.db.prepare('UPDATE scope_rows SET requests = 5 WHERE scope = ?').run(session.scope);
  assert.equal(store.totals([session])[0]?.requests, 5);
  assert.deepEqual(store.window(session), window);
});

test('in a group of steps, one that throws after adding takes its additions back; the steps around it commit theirs', (t) => {
  const { store, path } = openStore(t);
  const seen = store.group(() => {
    store.immediate(() => store.addTotals([session], { reserved_tokens: 10 }));
    assert.throws(
      () =>
        store.immediate(() => {
          store.addTotals([session, agent], { reserved_tokens: 1000 });
          store.putWindow(session, window);
          throw new Error('refused mid-step');
        }),
      /refused mid-step/,
    );
    return store.immediate(() => {
      store.addTotals([session], { reserved_tokens: 5 });
      return { tokens: store.totals([session])[0]?.reserved_tokens, window: store.window(session) };
    });
  });
  assert.deepEqual(seen, { tokens: 15, window: undefined });
  const rows = fileRows(t, path) as { scope: string; reserved_tokens: number; window_start: number | null }[];
  assert.deepEqual(
    rows.map((r) => [r.scope, r.reserved_tokens, r.window_start]),
    [[session.scope, 15, null]],
  );
  assert.equal(store.commits.lazy + store.commits.durable, 1, 'one commit for the group');
});
