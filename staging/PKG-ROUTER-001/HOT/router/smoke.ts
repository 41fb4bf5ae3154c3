import { CpError } from '#kernel/errors.js';
import { rowToEntry, verifyLedger } from '#kernel/ledger/index.js';
import { openRouter } from './open.js';

export const SMOKE_PROMPT = 'What is the meaning of life?';
export const SMOKE_ANSWER = 'The answer is 42';

export interface SmokeResult {
  ok: boolean;
  message: string;
  exchange_entry_id: string | null;
  problems: string[];
}

/**
 * The seed's end-to-end smoke exchange: one route() through the installed router with the mock provider,
 * then the ledger must hold exactly one new EXCHANGE with this prompt and this response, linked to its
 * DISPATCH, with the normalised-out fields absent, and the chain must verify.
 */
export async function runSmoke(
  root: string,
  options: { ledgerPath?: string; mockResponse?: string } = {},
): Promise<SmokeResult> {
  const opened = await openRouter(root, { provider: 'mock', devMode: true, mockResponse: SMOKE_ANSWER, ...options });
  const { ledger } = opened;
  if (ledger === null) throw new CpError('ERR_INTERNAL', 'the smoke test runs on a SQLite ledger, not a shared store');
  const problems: string[] = [];
  let exchangeId: string | null = null;
  try {
    const before = ledger.head().seq;
    const response = await opened.router.route({
      prompt: SMOKE_PROMPT,
      prompt_pack_id: 'PRM-TEST-001',
      contract_id: 'PRC-TEST-001',
      agent_id: 'AGENT-SMOKE',
      agent_class: 'ADMIN',
      framework_id: 'FMWK-000',
      package_id: 'PKG-TEST',
      work_order_id: 'WO-20260211-001',
      session_id: 'SES-SMOKE001',
      tier: 'hot',
    });
    const fresh = [...ledger.rows(before + 1)].map((row) => ({
      event_type: row.event_type,
      id: row.id,
      // As read: an EXCHANGE's prompt and response come back from the content store.
      metadata: ledger.withContent(rowToEntry(row)).metadata,
    }));
    const exchanges = fresh.filter((e) => e.event_type === 'EXCHANGE');
    const dispatches = fresh.filter((e) => e.event_type === 'DISPATCH');
    const expect = (cond: boolean, what: string): void => {
      if (!cond) problems.push(what);
    };
    expect(
      response.outcome === 'success',
      `route() outcome is ${response.outcome} (${response.error_code ?? ''} ${response.error_message ?? ''})`,
    );
    expect(
      response.content === SMOKE_ANSWER,
      `route() returned ${JSON.stringify(response.content)}, expected ${JSON.stringify(SMOKE_ANSWER)}`,
    );
    expect(exchanges.length === 1, `the ledger holds ${exchanges.length} new EXCHANGE records, expected exactly 1`);
    expect(dispatches.length === 1, `the ledger holds ${dispatches.length} new DISPATCH markers, expected exactly 1`);
    const ex = exchanges[0];
    if (ex) {
      exchangeId = ex.id;
      expect(ex.metadata.prompt === SMOKE_PROMPT, 'EXCHANGE metadata.prompt is not the prompt sent');
      expect(ex.metadata.response === SMOKE_ANSWER, "EXCHANGE metadata.response is not the provider's answer");
      expect(ex.metadata.outcome === 'success', `EXCHANGE outcome is ${String(ex.metadata.outcome)}`);
      expect(ex.metadata.agent_id === 'AGENT-SMOKE', 'EXCHANGE agent_id is wrong');
      expect(ex.metadata.dispatch_entry_id === dispatches[0]?.id, 'EXCHANGE does not link to its DISPATCH');
      expect(ex.id === response.exchange_entry_id, 'route() returned another exchange_entry_id than the one recorded');
      expect(
        !('package_id' in ex.metadata) && !('agent_class' in ex.metadata),
        'EXCHANGE carries normalised-out fields (package_id/agent_class)',
      );
    }
    const verified = verifyLedger(ledger);
    expect(verified.ok, `the ledger does not verify: ${verified.first_bad?.message ?? ''}`);
  } finally {
    await opened.close();
  }
  const ok = problems.length === 0;
  return {
    ok,
    problems,
    exchange_entry_id: exchangeId,
    message: ok
      ? 'SMOKE TEST PASSED: Exchange record contains prompt + response'
      : `SMOKE TEST FAILED: ${problems.join('; ')}`,
  };
}
