// The console's sessions view on a ledger of 1,000,000 entries (250,000 calls of four records each, 2,500
// sessions of 100 calls, 50 running at a time, as concurrent agents interleave): one page, newest first, a deep
// page by cursor, and the agent and time filters, each against reading the newest 50 entries of the same ledger.
import { join } from 'node:path';
import type * as LedgerModule from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { defineSuite, percentile, timeEach, type BenchRow } from '../row.js';

const { Ledger, listSessions } = await fromDevRoot<typeof LedgerModule>('HOT/kernel/ledger/index.js');

const SESSIONS_AT_ONCE = 50;
const CALLS_PER_SESSION = 100;
const TARGET_MS = 300;

function calls(session: number, turn: number, agent: string): LedgerModule.AppendInput[] {
  const id = `SES-${String(session).padStart(5, '0')}`;
  const meta = { session_id: id, agent_id: agent };
  const pieces = ['{"system":"You are a coding agent.","messages":['];
  for (let i = 0; i <= turn; i += 1) pieces.push(`${i > 0 ? ',' : ''}{"role":"user","content":"turn ${i} of ${id}"}`);
  pieces.push(']}');
  return [
    {
      event_type: 'DISPATCH',
      submission_id: 'anthropic.messages',
      decision: 'DISPATCHED',
      reason: 'r',
      metadata: meta,
    },
    {
      event_type: 'EXCHANGE',
      submission_id: 'anthropic.messages',
      decision: 'SUCCESS',
      reason: 'Exchange completed',
      metadata: {
        ...meta,
        input_tokens: 1000 + turn,
        cache_read_tokens: 900,
        cache_write_tokens: 10,
        output_tokens: 50,
        latency_ms: 800,
      },
      content: { prompt: pieces, response: [`reply ${turn}`] },
    },
    {
      event_type: 'BUDGET_ALLOCATED',
      submission_id: `req-${id}-${turn}`,
      decision: 'RESERVED',
      reason: 'r',
      metadata: meta,
    },
    {
      event_type: 'BUDGET_SETTLED',
      submission_id: `req-${id}-${turn}`,
      decision: 'SETTLED',
      reason: 'r',
      metadata: { ...meta, cost: 0.01 },
    },
  ];
}

export default defineSuite({
  name: 'console',
  async run({ quick, tmp, log }) {
    const entries = quick ? 100_000 : 1_000_000;
    const sessions = entries / 4 / CALLS_PER_SESSION;
    const ledger = Ledger.open(join(tmp, 'console-ledger.sqlite'), { create: true, synchronous: 'OFF' });
    try {
      const started = Date.now();
      // Groups of SESSIONS_AT_ONCE sessions run together: each takes a turn in round robin until all are done.
      for (let group = 0; group < sessions; group += SESSIONS_AT_ONCE) {
        for (let turn = 0; turn < CALLS_PER_SESSION; turn += 1) {
          const batch: LedgerModule.AppendInput[] = [];
          for (let s = group; s < Math.min(group + SESSIONS_AT_ONCE, sessions); s += 1)
            batch.push(...calls(s, turn, `AGENT-${String(s % 20).padStart(2, '0')}`));
          ledger.appendBatch(batch);
        }
      }
      log(`console: ${ledger.head().seq} entries written in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const head = ledger.head().seq;
      const mid = ledger.getBySeq(Math.floor(head / 2))?.timestamp as string;
      const late = ledger.getBySeq(Math.floor((head * 3) / 4))?.timestamp as string;
      let cursor: number | undefined;
      for (let page = 0; page < 10; page += 1)
        cursor =
          listSessions(ledger, { limit: 50, ...(cursor === undefined ? {} : { before: cursor }) }).next_before ??
          undefined;
      const runs = quick ? 5 : 15;
      const baseline = percentile(
        timeEach(runs, () => ledger.query({ limit: 50 })),
        50,
      );
      const cases: [string, LedgerModule.SessionQuery][] = [
        ['console_sessions_first_page', { limit: 50 }],
        ['console_sessions_page_11', { limit: 50, ...(cursor === undefined ? {} : { before: cursor }) }],
        ['console_sessions_by_agent', { limit: 50, agent: 'AGENT-07' }],
        ['console_sessions_time_window', { limit: 50, since: mid, until: late }],
      ];
      const rows: BenchRow[] = [];
      for (const [name, query] of cases) {
        const page = listSessions(ledger, query);
        if (page.sessions.length === 0) throw new Error(`${name}: no sessions`);
        const value = percentile(
          timeEach(runs, () => listSessions(ledger, query)),
          50,
        );
        rows.push({
          name: `${name}_p50_ms_${entries / 1000}k_entries`,
          value,
          unit: 'ms',
          baseline,
          ratio: value / baseline,
          target: `<= ${TARGET_MS} ms`,
          ok: value <= TARGET_MS,
        });
      }
      return rows;
    } finally {
      ledger.close();
    }
  },
});
