import { runSmoke } from '#router/smoke.js';
import { defineGate, verdict } from '../gate.js';

/**
 * G7: one exchange through the router installed in the root, with the mock provider, produces exactly one
 * EXCHANGE holding the prompt and the response (meaning, not structure). It records into a scratch ledger so
 * checking a root never writes to it: an in-memory SQLite database run by the same Ledger code (appends,
 * chain, verify), since a scratch file would cost a directory, a file, fsyncs and a delete per check and
 * prove nothing more about the router.
 */
const SCRATCH_LEDGER = ':memory:';

export default defineGate({
  id: 'G7',
  name: 'SMOKE',
  describe:
    'one exchange through the installed router (mock provider) yields exactly one EXCHANGE with the prompt and response',
  async run(ctx) {
    const result = await runSmoke(ctx.root, { ledgerPath: SCRATCH_LEDGER });
    return verdict(
      this,
      result.problems.map((message) => ({ code: 'SMOKE_FAILED', message })),
      result.message,
    );
  },
});
