import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { type CliContext, defineCommand, EXIT, type ExitCode } from '../command.js';
import { CpError, show } from '../../kernel/errors.js';
import {
  HASH_PATTERN,
  Ledger,
  previewRedaction,
  refuseQuotingReason,
  type RedactionStore,
  type RedactionTarget,
  selectRedaction,
} from '../../kernel/ledger/index.js';
import {
  LEDGER_TARGET_OPTIONS,
  type LedgerTargetArgs,
  ledgerPathFromArgs,
  storeOption,
  withPgLedger,
} from './target.js';

const PREVIEW_CHARS = 60;

export default defineCommand({
  name: 'redact',
  describe:
    'remove the content of an exchange, a session or one block from the store, keeping the chain verifiable (a REDACTED entry records it)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('redact the blocks'),
    exchange: { type: 'string', describe: 'the EXCHANGE entry id whose blocks go' },
    session: { type: 'string', describe: 'every EXCHANGE of this session: all their blocks go' },
    block: { type: 'string', describe: 'one block, by its digest (see --dry-run)' },
    reason: { type: 'string', describe: 'why (recorded in the REDACTED entry)' },
    'dry-run': { type: 'boolean', default: false, describe: 'list the blocks that would go, change nothing' },
    vacuum: {
      type: 'boolean',
      default: true,
      describe:
        'with --store: rewrite the blocks table afterwards (VACUUM FULL, then CHECKPOINT) so the text leaves its files; --no-vacuum leaves that to you',
    },
  },
  check(args) {
    const named = [args.exchange, args.session, args.block].filter((v) => v !== undefined).length;
    if (named !== 1)
      throw new CpError(
        'ERR_USAGE',
        'ledger redact needs exactly one of --exchange ID, --session S or --block DIGEST',
        {
          hint: 'preview first: cplane ledger redact --exchange ID --dry-run',
        },
      );
    if (!args.dryRun && (args.reason === undefined || args.reason.trim() === ''))
      throw new CpError('ERR_USAGE', 'ledger redact needs --reason TEXT (it is recorded in the REDACTED entry)', {
        hint: 'e.g. --reason "API key pasted into a prompt"',
      });
    if (args.vacuum === false && args.store === undefined)
      throw new CpError(
        'ERR_USAGE',
        '--no-vacuum is for --store: on SQLite the freed pages are zeroed as they are freed',
        {
          hint: 'drop --no-vacuum, or add --store postgres://…',
        },
      );
    if (args.block !== undefined && !HASH_PATTERN.test(args.block))
      throw new CpError('ERR_USAGE', `--block must be a block digest (64 lowercase hex), got ${show(args.block)}`, {
        hint: 'list an exchange’s blocks with --exchange ID --dry-run',
      });
  },
  async handler(args, ctx) {
    const run = (store: RedactionStore): Promise<ExitCode> => redactIn(store, args, ctx);
    if (args.store !== undefined) {
      const vacuum = args.vacuum;
      return withPgLedger(args.store, (pg) =>
        run({
          hasBlock: (digest) => pg.hasBlock(digest),
          sessionExchanges: (session) => pg.sessionExchanges(session),
          exchangeBlocks: (id) => pg.exchangeBlocks(id),
          block: (digest) => pg.block(digest),
          redact: async (blocks, record) => {
            const result = await pg.redact(blocks, record, { vacuum });
            const residue = localResidue(args, ctx, blocks);
            return residue === undefined ? result : { ...result, warnings: [...result.warnings, residue] };
          },
        }),
      );
    }
    const ledger = Ledger.open(ledgerPathFromArgs(args, ctx), { readonly: args.dryRun });
    try {
      return await run(ledger.redaction);
    } finally {
      ledger.close();
    }
  },
});

interface RedactArgs extends RedactionTarget {
  reason?: string | undefined;
  dryRun: boolean;
  json?: boolean | undefined;
}

/** The same selection, preview, record and report on either store. */
async function redactIn(store: RedactionStore, args: RedactArgs, ctx: CliContext): Promise<ExitCode> {
  const { blocks, exchanges } = await selectRedaction(store, args);
  if (args.dryRun) {
    const listed = await previewRedaction(store, blocks, PREVIEW_CHARS);
    ctx.report(args, { dry_run: true, exchanges, blocks: listed }, [
      `${listed.length} blocks would be redacted (a block is removed from every exchange that holds it):`,
      ...listed.map(
        (b) =>
          `  ${b.digest}  ${b.size} bytes  ${b.redacted_by === null ? show(b.preview ?? '') : `already redacted by ${b.redacted_by}`}`,
      ),
    ]);
    return EXIT.OK;
  }
  await refuseQuotingReason(store, blocks, args.reason as string);
  const result = await store.redact(blocks, { reason: args.reason as string, by: actor(), exchanges });
  const out = {
    entry_id: result.entry.id,
    blocks: blocks.length,
    redacted: result.redacted,
    already_redacted: result.already,
    exchanges,
    checkpointed: result.checkpointed,
    warnings: result.warnings,
  };
  ctx.report(args, out, [
    `redacted ${result.redacted} blocks (${result.already} already were), recorded as ${result.entry.id}`,
    'a block is redacted everywhere it appears: every exchange holding it now reads [REDACTED:' +
      `${result.entry.id}] in its place`,
    ...result.warnings.map((w) => `warning: ${w}`),
  ]);
  return EXIT.OK;
}

/**
 * A root that moved to a store (`ledger migrate`) keeps its SQLite file, with every exchange recorded before the
 * move: the blocks just removed from the store may still be there with their text, under the root.
 */
function localResidue(args: LedgerTargetArgs, ctx: CliContext, blocks: readonly string[]): string | undefined {
  if (args.root === undefined && ctx.defaultRoot === null) return undefined;
  let path = 'file';
  let local: Ledger | undefined;
  try {
    path = ledgerPathFromArgs(args, ctx);
    if (!existsSync(path)) return undefined;
    local = Ledger.open(path, { readonly: true });
    const file = local;
    const held = blocks.filter((digest) => file.content.block(digest)?.text !== undefined);
    if (held.length === 0) return undefined;
    return `the root's own ledger ${path} still holds ${held.length} of these blocks with their text (recorded there before the move to the store): remove them there too with \`cplane ledger redact --ledger ${path} --block DIGEST --reason …\` (${held.slice(0, 5).join(', ')}${held.length > 5 ? ', …' : ''})`;
  } catch (error) {
    // The redaction on the store is committed: a file that cannot be read is said, not thrown.
    return `the root's own ledger ${path} could not be checked for these blocks (${(error as Error).message}): it may still hold their text`;
  } finally {
    local?.close();
  }
}

function actor(): string {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
}
