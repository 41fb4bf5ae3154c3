import { resolve } from 'node:path';
import { checkLedgerCheckpoints, type Ledger, type RootCheckpointReport } from '../../kernel/ledger/index.js';
import type { CliContext } from '../command.js';
import { resolveRoot } from '../root-option.js';
import type { LedgerTargetArgs } from './target.js';

export interface CheckpointArgs {
  checkpoint?: string[] | undefined;
  checkpointKey?: string[] | undefined;
}

export const CHECKPOINT_OPTIONS = {
  checkpoint: {
    type: 'string',
    array: true,
    describe: 'a checkpoint kept elsewhere (one JSON, or JSON Lines): the chain must match it (repeatable)',
  },
  'checkpoint-key': {
    type: 'string',
    array: true,
    describe: "verify checkpoints with this public key instead of the trust store's checkpoint key",
  },
} as const;

/** The root's checkpoints (with --root) and every --checkpoint file, checked against the open ledger. */
export function checkpointsFor(
  ledger: Ledger,
  args: LedgerTargetArgs & CheckpointArgs,
  ctx: CliContext,
): RootCheckpointReport {
  const root = typeof args.ledger === 'string' && args.ledger.length > 0 ? null : resolveRoot(args.root, ctx);
  return checkLedgerCheckpoints(ledger, {
    root,
    files: (args.checkpoint ?? []).map((f) => resolve(ctx.cwd, f)),
    keyFiles: (args.checkpointKey ?? []).map((f) => resolve(ctx.cwd, f)),
  });
}

export function checkpointLines(report: RootCheckpointReport): string[] {
  if (report.absent)
    return [
      'checkpoints: none to check against (a root bootstrapped before checkpoints has no root key; pass --checkpoint FILE)',
    ];
  // A rewrite early in a long chain breaks every checkpoint after it: the first ones say where; --json has them all.
  const lines = report.findings.slice(0, 20).map((f) => `checkpoint ${f.problem.toUpperCase()}: ${f.message}`);
  if (report.findings.length > 20) lines.push(`… and ${report.findings.length - 20} more (--json lists them all)`);
  const newest = report.newest;
  lines.push(
    `checkpoints: ${report.verified} of ${report.checked} verified${newest ? `; every entry up to #${newest.seq} is proven (signed ${newest.time})` : ''}`,
  );
  return lines;
}
