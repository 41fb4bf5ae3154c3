import { userInfo } from 'node:os';
import { defineCommand, EXIT } from '../command.js';
import { CpError, show } from '../../kernel/errors.js';
import { HASH_PATTERN, type Ledger } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

const PREVIEW_CHARS = 60;

export default defineCommand({
  name: 'redact',
  describe:
    'remove the content of an exchange, a session or one block from the store, keeping the chain verifiable (a REDACTED entry records it)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    exchange: { type: 'string', describe: 'the EXCHANGE entry id whose blocks go' },
    session: { type: 'string', describe: 'every EXCHANGE of this session: all their blocks go' },
    block: { type: 'string', describe: 'one block, by its digest (see --dry-run)' },
    reason: { type: 'string', describe: 'why (recorded in the REDACTED entry)' },
    'dry-run': { type: 'boolean', default: false, describe: 'list the blocks that would go, change nothing' },
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
    if (args.block !== undefined && !HASH_PATTERN.test(args.block))
      throw new CpError('ERR_USAGE', `--block must be a block digest (64 lowercase hex), got ${show(args.block)}`, {
        hint: 'list an exchange’s blocks with --exchange ID --dry-run',
      });
  },
  handler(args, ctx) {
    return withLedger(args, ctx, { readonly: args.dryRun }, (ledger) => {
      const { blocks, exchanges } = selected(ledger, args);
      if (args.dryRun) {
        const listed = blocks.map((digest) => {
          const block = ledger.content.block(digest);
          const text = block?.text;
          return {
            digest,
            size: block?.size ?? 0,
            redacted_by: block?.redacted_by ?? null,
            preview: text === undefined ? null : text.slice(0, PREVIEW_CHARS),
          };
        });
        ctx.report(args, { dry_run: true, exchanges, blocks: listed }, [
          `${listed.length} blocks would be redacted (a block is removed from every exchange that holds it):`,
          ...listed.map(
            (b) =>
              `  ${b.digest}  ${b.size} bytes  ${b.redacted_by === null ? show(b.preview ?? '') : `already redacted by ${b.redacted_by}`}`,
          ),
        ]);
        return EXIT.OK;
      }
      const by = actor();
      const result = ledger.redact(blocks, { reason: args.reason as string, by, exchanges });
      const out = {
        entry_id: result.entry.id,
        blocks: blocks.length,
        redacted: result.redacted,
        already_redacted: result.already,
        exchanges,
        checkpointed: result.checkpointed,
      };
      ctx.report(args, out, [
        `redacted ${result.redacted} blocks (${result.already} already were), recorded as ${result.entry.id}`,
        'a block is redacted everywhere it appears: every exchange holding it now reads [REDACTED:' +
          `${result.entry.id}] in its place`,
        ...(result.checkpointed
          ? []
          : [
              'warning: another process holds the ledger open, so its WAL could not be truncated yet; the removed text stays in the -wal file until its next checkpoint',
            ]),
      ]);
      return EXIT.OK;
    });
  },
});

function selected(
  ledger: Ledger,
  args: { exchange?: string | undefined; session?: string | undefined; block?: string | undefined },
): { blocks: string[]; exchanges: string[] } {
  if (args.block !== undefined) {
    if (!ledger.content.hasBlock(args.block)) throw notFound(`block ${args.block}`);
    return { blocks: [args.block], exchanges: [] };
  }
  const exchanges = args.exchange !== undefined ? [args.exchange] : ledger.sessionExchanges(args.session as string);
  if (exchanges.length === 0) throw notFound(`session ${show(args.session)} (it has no EXCHANGE)`);
  const blocks = new Set<string>();
  for (const id of exchanges) {
    const found = ledger.exchangeBlocks(id);
    if (found === undefined) throw notFound(`entry ${show(id)}`);
    if (found.length === 0 && args.exchange !== undefined) {
      throw new CpError(
        'ERR_LEDGER_REDACT_INLINE',
        `entry ${show(id)} has no content in the store (written before it, or not an exchange): its text is part of its hash`,
        {
          hint: 'only content written through the content store can be redacted with the chain intact',
          details: { entry_id: id },
        },
      );
    }
    for (const block of found) blocks.add(block);
  }
  return { blocks: [...blocks], exchanges };
}

function notFound(what: string): CpError {
  return new CpError('ERR_LEDGER_REDACT_NOT_FOUND', `the ledger holds no ${what}`, {
    hint: 'find the id with `cplane ledger query --json`; preview what would go with --dry-run',
    details: { what },
  });
}

function actor(): string {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
}
