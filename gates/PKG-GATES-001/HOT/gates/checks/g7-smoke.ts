import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSmoke } from '../../router/smoke.js';
import { defineGate, verdict } from '../gate.js';

/**
 * G7: one exchange through the router installed in the root, with the mock provider, produces exactly one
 * EXCHANGE holding the prompt and the response (meaning, not structure). It records into a scratch ledger so
 * checking a root never writes to it.
 */
export default defineGate({
  id: 'G7',
  name: 'SMOKE',
  describe: 'one exchange through the installed router (mock provider) yields exactly one EXCHANGE with the prompt and response',
  async run(ctx) {
    const scratch = mkdtempSync(join(tmpdir(), 'cplane-g7-'));
    try {
      const result = await runSmoke(ctx.root, { ledgerPath: join(scratch, 'smoke.sqlite') });
      return verdict(this, result.problems.map((message) => ({ code: 'SMOKE_FAILED', message })), result.message);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  },
});
