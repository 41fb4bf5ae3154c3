// `cplane report --html` embeds each session's turns keyed by its session id, and the id is the client's to
// choose (x-cplane-session): an id such as "__proto__" must land in the report like any other, not vanish.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SessionSummary, SessionTurn } from '#kernel/ledger/index.js';
import type { ConsoleData } from '../../gateway/console/data.js';
import { MAX_REPORT_TEXT_CHARS, reportData } from '../../gateway/console/report-data.js';

test('a session whose id is an Object.prototype name keeps its turns in the report', async () => {
  const ids = ['__proto__', 'constructor', 'SES-PLAIN'];
  const view = {
    sessions: async () => ({
      sessions: ids.map((session_id, i) => ({ session_id, last_seq: 10 - i }) as unknown as SessionSummary),
      next_before: null,
    }),
    session: async (id: string) => ({
      turns: [{ id: `turn-of-${id}`, seq: 1, prompt_new: [], response: '' } as unknown as SessionTurn],
      next_after: null,
    }),
    rootView: async () => ({}),
    budgets: async () => ({}),
    breakers: async () => ({}),
    alerts: async () => ({}),
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

test('a report stops embedding turns at MAX_REPORT_TEXT_CHARS and says whose turns it cut', async () => {
  // Every session's every turn as large as a gateway body may be: one shared string, so the test holds little.
  const big = 'x'.repeat(32 * 1024 * 1024);
  const ids = Array.from({ length: 10 }, (_, i) => `SES-${i}`);
  let reads = 0;
  const view = {
    sessions: async () => ({
      sessions: ids.map((session_id, i) => ({ session_id, last_seq: 100 - i }) as unknown as SessionSummary),
      next_before: null,
    }),
    session: async (id: string, options: { after?: number }) => {
      reads += 1;
      const seq = (options.after ?? 0) + 1;
      // A page ends after one such turn (MAX_TURN_PAGE_CHARS); each session has ten.
      return {
        turns: [{ id: `${id}-${seq}`, seq, prompt_new: ['{}'], response: big } as unknown as SessionTurn],
        next_after: seq < 10 ? seq : null,
      };
    },
    rootView: async () => ({}),
    budgets: async () => ({}),
    breakers: async () => ({}),
    alerts: async () => ({}),
    plots: async () => ({}),
  } as unknown as ConsoleData;
  const data = (await reportData(view, { sessions: 100, turns: 500 })) as {
    turns: Record<string, SessionTurn[]>;
    turns_cut: Record<string, number>;
  };
  let text = 0;
  for (const list of Object.values(data.turns)) for (const t of list) text += t.response.length;
  assert.ok(text < MAX_REPORT_TEXT_CHARS + big.length + 1, `the report embeds ${text} characters of turns`);
  assert.ok(reads < 100, `${reads} pages were read for a report that holds a few`);
  // What was kept is said: the first session's turns in part, the others' not at all.
  assert.equal(data.turns_cut['SES-0'], data.turns['SES-0']?.length);
  assert.equal(data.turns_cut['SES-9'], 0);
  assert.deepEqual(data.turns['SES-9'], []);
});
