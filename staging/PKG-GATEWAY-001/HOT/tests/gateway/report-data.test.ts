// `cplane report --html` embeds each session's turns keyed by its session id, and the id is the client's to
// choose (x-cplane-session): an id such as "__proto__" must land in the report like any other, not vanish.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SessionSummary, SessionTurn } from '#kernel/ledger/index.js';
import type { ConsoleData } from '../../gateway/console/data.js';
import { reportData } from '../../gateway/console/report-data.js';

test('a session whose id is an Object.prototype name keeps its turns in the report', async () => {
  const ids = ['__proto__', 'constructor', 'SES-PLAIN'];
  const view = {
    sessions: async () => ({
      sessions: ids.map((session_id, i) => ({ session_id, last_seq: 10 - i }) as unknown as SessionSummary),
      next_before: null,
    }),
    session: async (id: string) => ({
      turns: [{ id: `turn-of-${id}`, seq: 1 } as unknown as SessionTurn],
      next_after: null,
    }),
    rootView: async () => ({}),
    budgets: async () => ({}),
    breakers: async () => ({}),
    plots: async () => ({}),
  } as unknown as ConsoleData;
  const data = await reportData(view, { sessions: 10, turns: 10 });
  // What the page embeds is the JSON text: each session's turns must be in it.
  const embedded = JSON.parse(JSON.stringify(data)) as { turns: Record<string, Array<{ id: string }>> };
  for (const id of ids) {
    assert.ok(Object.hasOwn(embedded.turns, id), `no turns for ${id}`);
    assert.deepEqual(
      embedded.turns[id]?.map((t) => t.id),
      [`turn-of-${id}`],
    );
  }
});
