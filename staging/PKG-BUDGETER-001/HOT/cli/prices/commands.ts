import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import type { ModelPrice } from '../../budgeter/config.js';
import type { PriceFormat } from '../../budgeter/prices/formats.js';
import {
  type ImportPlan,
  importPrices,
  planImport,
  priceTable,
  type PriceRow,
  readPriceFile,
} from '../../budgeter/prices/table.js';

const ROOT = rootOption('the cplane root whose price table to act on');

const FILE_OPTIONS = {
  ...ROOT,
  format: {
    type: 'string',
    choices: ['litellm', 'models.dev'],
    describe: 'the file format (default: recognised from its shape)',
  },
  provider: {
    type: 'string',
    array: true,
    describe:
      "import only these providers' models (LiteLLM's litellm_provider, models.dev's provider key), first one wins",
  },
  'override-shipped': {
    type: 'boolean',
    default: false,
    describe: 'let the file replace prices the shipped table gives (default: they are listed and kept)',
  },
} as const;

const FILE_POSITIONAL = {
  file: { type: 'string', demandOption: true, describe: 'model_prices_and_context_window.json or api.json' },
} as const;

function money(p: ModelPrice): string {
  return `in ${p.input_per_mtok} out ${p.output_per_mtok} cache read ${p.cache_read_per_mtok} write ${p.cache_write_5m_per_mtok}/${p.cache_write_1h_per_mtok}`;
}

function planLines(plan: ImportPlan, applied: boolean): string[] {
  const verb = applied ? '' : 'would be ';
  return [
    `${plan.source} (${plan.format}): ${plan.added.length} ${verb}added, ${plan.changed.length} ${verb}changed, ${plan.unchanged} unchanged, ${plan.skipped} skipped (not priced per token)`,
    ...plan.added.map((m) => `  + ${m}`),
    ...plan.changed.map((c) => `  ~ ${c.model}: ${money(c.before)} -> ${money(c.after)}`),
    ...plan.kept_shipped.map(
      (c) =>
        `  = ${c.model} kept at the shipped price ${money(c.before)} (file: ${money(c.after)}; --override-shipped replaces it)`,
    ),
    ...(plan.conflicts.length > 0
      ? [
          `  ! priced differently by several providers, not imported (pick with --provider): ${plan.conflicts.join(', ')}`,
        ]
      : []),
  ];
}

export const list = defineCommand({
  name: 'list',
  describe: 'the effective price table (USD per million tokens) with the source of each price',
  options: { ...ROOT, model: { type: 'string', describe: 'only models whose id contains this' } },
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const rows = priceTable(root).filter((r) => args.model === undefined || r.model.includes(args.model));
    ctx.report(
      args,
      rows,
      rows.map((r: PriceRow) => `${r.model}  ${money(r)}  [${r.source}]`),
    );
    return EXIT.OK;
  },
});

export const diff = defineCommand({
  name: 'diff',
  describe: 'what importing a LiteLLM or models.dev price file would change (nothing is written)',
  positionals: FILE_POSITIONAL,
  options: FILE_OPTIONS,
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const parsed = readPriceFile(args.file, {
      format: args.format as PriceFormat | undefined,
      providers: args.provider,
    });
    const { plan } = planImport(root, parsed, args.file, { overrideShipped: args.overrideShipped });
    ctx.report(args, plan, planLines(plan, false));
    return EXIT.OK;
  },
});

export const importCommand = defineCommand({
  name: 'import',
  describe: 'import a LiteLLM or models.dev price file into the operator config (recorded as CONFIG_CHANGED)',
  positionals: FILE_POSITIONAL,
  options: FILE_OPTIONS,
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const result = importPrices(root, args.file, {
      format: args.format as PriceFormat | undefined,
      providers: args.provider,
      overrideShipped: args.overrideShipped,
    });
    const tail =
      result.change === null ? ['nothing to change'] : [`recorded ${result.change.entry_id ?? '(unchanged)'}`];
    ctx.report(args, result, [...planLines(result, true), ...tail]);
    return EXIT.OK;
  },
});
