import { defineCommand, EXIT } from '#cli/command.js';
import { resolve } from 'node:path';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { writeFileAtomic } from '#kernel/atomic.js';
import { rootPaths } from '#kernel/root/layout.js';
import { explicitStoreUrl } from '#kernel/config/root-store.js';
import { runGates, DEFAULT_ORPHAN_TIMEOUT_MS } from '../../gates/run.js';

export default defineCommand({
  name: 'gate-check',
  aliases: ['gate_check'],
  describe: 'run the gate checks on a root (exit 1 when any gate FAILs)',
  options: {
    ...rootOption('the root to check'),
    all: { type: 'boolean', describe: 'run every installed gate (the default when no --gate is given)' },
    gate: { type: 'string', array: true, describe: 'run only these gates, e.g. --gate G1 G4' },
    strict: { type: 'boolean', default: false, describe: 'treat WARN as FAIL' },
    'orphan-timeout-ms': {
      type: 'number',
      default: DEFAULT_ORPHAN_TIMEOUT_MS,
      describe: 'age after which a DISPATCH without EXCHANGE is an orphan',
    },
    checkpoint: {
      type: 'string',
      array: true,
      describe: 'G4 also checks the chain against this checkpoint kept elsewhere (repeatable)',
    },
    'checkpoint-key': {
      type: 'string',
      array: true,
      describe: "G4 verifies checkpoints with this public key instead of the trust store's",
    },
    store: {
      type: 'string',
      describe:
        'G4 and G6 check the chain in this PostgreSQL store (env: CPLANE_DATABASE_URL; config: gateway.store; none: the SQLite ledger)',
    },
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const run = await runGates(root, {
      only: args.all ? [] : (args.gate ?? []),
      strict: args.strict,
      orphanTimeoutMs: args.orphanTimeoutMs,
      checkpointFiles: (args.checkpoint ?? []).map((f) => resolve(ctx.cwd, f)),
      checkpointKeyFiles: (args.checkpointKey ?? []).map((f) => resolve(ctx.cwd, f)),
      // The root's own gateway.store is read by the gates that need it, so a broken config is their finding.
      ...storeOption(explicitStoreUrl(ctx.env, args.store)),
    });
    const lines = run.gates.map((g) => `${g.id} ${g.name}: ${g.status} — ${g.message}`);
    for (const g of run.gates) {
      if (g.status !== 'PASS') for (const f of g.findings.slice(0, 20)) lines.push(`    ${f.code}: ${f.message}`);
    }
    lines.push(
      `${run.failed === 0 ? 'PASS' : 'FAIL'}: ${run.passed} passed, ${run.failed} failed, ${run.warned} warned (${run.gates.length} gates)`,
    );
    const result = { gates: run.gates, passed: run.passed, failed: run.failed, warned: run.warned };
    // The console and `cplane report` show the last check; a root this user cannot write still gets its answer.
    try {
      writeFileAtomic(
        rootPaths(root).lastGateCheck,
        JSON.stringify({
          checked_at: new Date().toISOString(),
          strict: args.strict,
          ...result,
          gates: run.gates.map((g) => ({ ...g, findings: g.findings.slice(0, 50) })),
        }),
      );
    } catch (error) {
      ctx.err(`cplane gate-check: warning: the result was not saved for the console (${(error as Error).message})`);
    }
    ctx.report(args, result, lines);
    return run.failed === 0 ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});

function storeOption(store: string | undefined): { store?: string } {
  return store === undefined ? {} : { store };
}
