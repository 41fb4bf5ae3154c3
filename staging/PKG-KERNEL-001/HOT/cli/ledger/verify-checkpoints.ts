import { resolve } from 'node:path';
import { checkLedgerCheckpoints, type Ledger, type RootCheckpointReport } from '../../kernel/ledger/index.js';
import { gatherCheckpoints } from '../../kernel/ledger/checkpoint-check.js';
import {
  checkCosigned,
  configuredCosigners,
  type CosignedCheck,
  cosignedFiles,
} from '../../kernel/ledger/merkle/cosigned-check.js';
import { type ChainRoots, checkNoteCheckpoints, isNoteFile } from '../../kernel/ledger/merkle/note-checkpoints.js';
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
    describe:
      'a checkpoint kept elsewhere (one JSON, JSON Lines, or a C2SP checkpoint note): the chain must match it (repeatable)',
  },
  'checkpoint-key': {
    type: 'string',
    array: true,
    describe: "verify checkpoints with this public key instead of the trust store's checkpoint key",
  },
} as const;

/** The checkpoint files the arguments name (C2SP notes apart) and the keys given. */
export function checkpointArgs(args: CheckpointArgs, ctx: CliContext) {
  const files = (args.checkpoint ?? []).map((f) => resolve(ctx.cwd, f));
  // C2SP checkpoint notes are checked against the Merkle tree, cplane's JSON checkpoints against the chain.
  const notes = files.filter(isNoteFile);
  return {
    files: files.filter((f) => !notes.includes(f)),
    notes,
    keyFiles: (args.checkpointKey ?? []).map((f) => resolve(ctx.cwd, f)),
  };
}

/** The root's checkpoints (with --root) and every --checkpoint file, checked against the open ledger and its tree. */
export function checkpointsFor(
  ledger: Ledger,
  args: LedgerTargetArgs & CheckpointArgs,
  ctx: CliContext,
  tree: ChainRoots,
): RootCheckpointReport {
  const root = verifiedRoot(args, ctx);
  const { files, notes, keyFiles } = checkpointArgs(args, ctx);
  const report = checkLedgerCheckpoints(ledger, { root, files, keyFiles });
  if (notes.length === 0) return report;
  return checkNoteCheckpoints(tree, notes, gatherCheckpoints({ root, keyFiles }).keys, report);
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

/** The root of a verify run: none with --ledger FILE (a bare ledger has no root beside it). */
export function verifiedRoot(args: LedgerTargetArgs, ctx: CliContext): string | null {
  return typeof args.ledger === 'string' && args.ledger.length > 0 ? null : resolveRoot(args.root, ctx);
}

/** The root's cosigned checkpoints (HOT/ledger/cosigned) judged against the chain's tree; none without a root. */
export function cosignedFor(
  root: string | null,
  files: readonly string[],
  tree: ChainRoots,
  keyFiles: readonly string[],
): CosignedCheck {
  if (root === null || files.length === 0)
    return { ok: true, files: 0, verified: 0, cosignatures: {}, newest: null, problems: [], untrusted: [] };
  return checkCosigned(tree, files, gatherCheckpoints({ root, keyFiles }).keys, configuredCosigners(root));
}

export { cosignedFiles };
