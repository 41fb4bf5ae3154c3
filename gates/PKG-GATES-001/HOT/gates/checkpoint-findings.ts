import {
  type CheckpointSources,
  checkLedgerCheckpoints,
  type Ledger,
  type RootCheckpointReport,
} from '#kernel/ledger/index.js';
import type { Finding, GateContext } from './gate.js';

/**
 * G4's checkpoint part: each problem is a FAIL (CHECKPOINT_<PROBLEM>); a root with no root key (bootstrapped before
 * checkpoints) and nothing given is a WARN, since nothing after its last install is anchored outside the database.
 */
export function checkpointFindings(
  ctx: GateContext,
  ledger: Ledger,
): { errors: Finding[]; warnings: Finding[]; summary: string } {
  return checkpointReportFindings(checkLedgerCheckpoints(ledger, checkpointSources(ctx)));
}

/** The checkpoints G4 checks: the root's own and those given (`--checkpoint`, `--checkpoint-key`). */
export function checkpointSources(ctx: GateContext): CheckpointSources {
  return { root: ctx.root, files: ctx.checkpointFiles ?? [], keyFiles: ctx.checkpointKeyFiles ?? [] };
}

/** A checkpoint report (of either store) as G4's findings. */
export function checkpointReportFindings(report: RootCheckpointReport): {
  errors: Finding[];
  warnings: Finding[];
  summary: string;
} {
  if (report.absent) {
    return {
      errors: [],
      summary: 'no checkpoints',
      warnings: [
        {
          code: 'CHECKPOINTS_ABSENT',
          message:
            'no signed checkpoints: this root has no root key (bootstrapped before checkpoints); only receipt anchors bound the chain',
        },
      ],
    };
  }
  const errors = report.findings.map((f) => ({
    code:
      f.problem === 'missing'
        ? ('CHECKPOINTS_MISSING' as const)
        : (`CHECKPOINT_${f.problem.toUpperCase() as Uppercase<Exclude<typeof f.problem, 'missing'>>}` as const),
    message: f.message,
    ...(f.source.startsWith('HOT/') ? { path: f.source } : {}),
  }));
  return {
    errors,
    warnings: [],
    summary: `${report.verified} checkpoint(s) match${report.newest ? ` up to #${report.newest.seq}` : ''}`,
  };
}
