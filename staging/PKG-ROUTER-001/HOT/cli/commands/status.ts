import { existsSync } from 'node:fs';
import { CpError, show } from '#kernel/errors.js';
import { Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { breakerStatePath, readBreakerStates } from '../../router/open.js';
import { rootPaths } from '#kernel/root/layout.js';

export default defineCommand({
  name: 'status',
  describe: 'circuit breaker states per provider/model and the ledger head',
  options: rootOption('the root'),
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    if (!existsSync(rootPaths(root).hot)) {
      throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} is not a cplane root (no HOT/)`, {
        hint: 'bootstrap it first, or check --root',
        details: { root },
      });
    }
    const breakers = readBreakerStates(breakerStatePath(root));
    const path = ledgerPathForRoot(root);
    let head = null;
    if (existsSync(path)) {
      // Read-only: a status check never writes to the ledger (nor to a file that is not one).
      const ledger = Ledger.open(path, { readonly: true });
      try {
        head = ledger.head();
      } finally {
        ledger.close();
      }
    }
    const lines = [
      `ledger head: ${head ? `${head.seq}:${head.hash}` : 'no ledger yet'}`,
      breakers.length === 0 ? 'circuit breakers: none tripped yet (all CLOSED)' : 'circuit breakers:',
      ...breakers.map(
        (b) =>
          `  ${b.key}: ${b.state} (${b.consecutive_failures} consecutive failures${b.opened_at ? `, opened ${b.opened_at}` : ''})`,
      ),
    ];
    ctx.report(args, { ledger_head: head, breakers }, lines);
    return EXIT.OK;
  },
});
