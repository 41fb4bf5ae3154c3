import { type CliContext, defineCommand, EXIT, type ExitCode } from '../command.js';
import { formatAnchor, type Ledger, parseAnchor, verifyLedger } from '../../kernel/ledger/index.js';
import { gatherCheckpoints } from '../../kernel/ledger/checkpoint-check.js';
import { type ChainRoots, checkNoteCheckpoints, noteSizes } from '../../kernel/ledger/merkle/note-checkpoints.js';
import { checkPgTree } from '../../kernel/ledger/merkle/pg-tree.js';
import { type TreeCheck, treeLines, treeUnreadable } from '../../kernel/ledger/merkle/tree-check.js';
import { checkLedgerTree } from '../../kernel/ledger/merkle/tree-view.js';
import { verifyPgChain } from '../../kernel/ledger/pg/pg-checks.js';
import { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { resolveRoot } from '../root-option.js';
import {
  type CheckpointArgs,
  CHECKPOINT_OPTIONS,
  checkpointArgs,
  checkpointLines,
  checkpointsFor,
  cosignedFiles,
  cosignedFor,
  verifiedRoot,
} from './verify-checkpoints.js';
import { cosignedLines } from '../../kernel/ledger/merkle/cosigned-check.js';
import { LEDGER_TARGET_OPTIONS, type LedgerTargetArgs, withLedger } from './target.js';

export default defineCommand({
  name: 'verify',
  describe: 'recompute the hash chain; exit 1 and name the first bad entry when it is broken',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    anchor: { type: 'string', describe: 'SEQ:HASH recorded earlier (`ledger head`): also catches a deleted tail' },
    ...CHECKPOINT_OPTIONS,
    store: {
      type: 'string',
      conflicts: ['ledger', 'anchor'],
      describe:
        "verify the chain in this PostgreSQL store instead (postgres://user@host/db; with --root, against the root's checkpoints)",
    },
  },
  async handler(args, ctx) {
    if (args.store !== undefined) return verifyPostgres(args.store, args, ctx);
    const anchor = args.anchor === undefined ? undefined : parseAnchor(args.anchor);
    const root = verifiedRoot(args, ctx);
    const cosignedAt = root === null ? [] : cosignedFiles(root);
    const { notes, keyFiles } = checkpointArgs(args, ctx);
    const [result, tree, checkpoints, cosigned] = withLedger(args, ctx, { readonly: true }, (ledger) => {
      const result = verifyLedger(ledger, anchor ? { anchor } : {});
      const { check, roots } = treeOf(ledger, noteSizes([...notes, ...cosignedAt]));
      return [
        result,
        check,
        checkpointsFor(ledger, args, ctx, roots),
        cosignedFor(root, cosignedAt, roots, keyFiles),
      ] as const;
    });
    const bad = result.first_bad;
    const lines = bad
      ? [
          `ledger BROKEN at ${bad.id ?? `#${bad.seq}`}: ${bad.problem}`,
          `  ${bad.message}`,
          `  last good: ${formatAnchor(result.head)}`,
        ]
      : [
          `${result.ok ? 'ledger intact' : 'chain intact'}: ${result.entries} entries, head ${formatAnchor(result.head)}`,
        ];
    for (const problem of result.schema_problems ?? [])
      lines.push(`schema ${problem.kind.toUpperCase()}: ${problem.message}`);
    const content = result.content;
    if (content) {
      lines.push(
        `content: ${content.blocks} blocks (${content.redacted_blocks} redacted), ${content.lists} list nodes, ${content.problem_count === 0 ? 'intact' : `${content.problem_count} problems`}`,
      );
      for (const problem of content.problems) lines.push(`content ${problem.kind.toUpperCase()}: ${problem.message}`);
    }
    ctx.report(args, { ...result, tree, checkpoints, cosigned }, [
      ...lines,
      ...treeLines(tree),
      ...checkpointLines(checkpoints),
      ...cosignedLines(cosigned),
    ]);
    return result.ok && tree.ok && checkpoints.ok && cosigned.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});

/** The tree re-checked against the chain; a ledger too damaged to walk is reported, never a crash of verify. */
function treeOf(ledger: Ledger, sizes: ReadonlySet<number>): { check: TreeCheck; roots: ChainRoots } {
  try {
    return checkLedgerTree(ledger, sizes);
  } catch (error) {
    const size = ledger.head().seq;
    return {
      check: treeUnreadable(size, error),
      roots: { ledgerId: '', size, rootAt: () => undefined, tilesDamagedFrom: 0 },
    };
  }
}

/** The chain in a PostgreSQL store, re-hashed end to end, and checked against the root's checkpoints. */
async function verifyPostgres(
  url: string,
  args: LedgerTargetArgs & CheckpointArgs & { json?: boolean | undefined },
  ctx: CliContext,
): Promise<ExitCode> {
  const store = await PgLedger.open(url);
  try {
    const root = args.root === undefined && !ctx.defaultRoot ? null : resolveRoot(args.root, ctx);
    const { files, notes, keyFiles } = checkpointArgs(args, ctx);
    const { result, checkpoints: chained } = await verifyPgChain(store, { root, files, keyFiles });
    const cosignedAt = root === null ? [] : cosignedFiles(root);
    const { check: tree, roots } = await checkPgTree(store, noteSizes([...notes, ...cosignedAt])).catch(
      (error: unknown) => ({
        check: treeUnreadable(result.entries, error),
        roots: { ledgerId: '', size: 0, rootAt: () => undefined, tilesDamagedFrom: 0 },
      }),
    );
    const checkpoints =
      notes.length === 0
        ? chained
        : checkNoteCheckpoints(roots, notes, gatherCheckpoints({ root, keyFiles }).keys, chained);
    const cosigned = cosignedFor(root, cosignedAt, roots, keyFiles);
    const bad = result.first_bad;
    const lines = bad
      ? [`ledger BROKEN at ${bad.id}: ${bad.problem}`, `  ${bad.message}`, `  last good: ${formatAnchor(result.head)}`]
      : [
          `${result.ok ? 'ledger intact' : 'chain intact'} (postgres): ${result.entries} entries, head ${formatAnchor(result.head)}`,
        ];
    const content = result.content;
    if (content)
      lines.push(
        `content: ${content.blocks} blocks (${content.redacted_blocks} redacted), ${content.lists} list nodes, ${result.content_problems.length === 0 ? 'intact' : `${result.content_problems.length} problems`}`,
      );
    for (const problem of result.content_problems) lines.push(`content: ${problem}`);
    ctx.report(args, { ...result, tree, checkpoints, cosigned }, [
      ...lines,
      ...treeLines(tree),
      ...checkpointLines(checkpoints),
      ...cosignedLines(cosigned),
    ]);
    return result.ok && tree.ok && checkpoints.ok && cosigned.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  } finally {
    await store.close();
  }
}
