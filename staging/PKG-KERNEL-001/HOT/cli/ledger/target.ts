import { resolve } from 'node:path';
import { Ledger, ledgerPathForRoot, type LedgerEntry, type LedgerOptions } from '../../kernel/ledger/index.js';
import { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import type { CliContext } from '../command.js';
import { resolveRoot } from '../root-option.js';

export interface LedgerTargetArgs {
  root?: string | undefined;
  ledger?: string | undefined;
}

/** `--root R` (the ledger at R/HOT/ledger/ledger.sqlite) or `--ledger FILE`: every ledger subcommand takes one. */
export const LEDGER_TARGET_OPTIONS = {
  root: {
    type: 'string',
    describe: 'act on the ledger of this cplane root (R/HOT/ledger/ledger.sqlite)',
    conflicts: 'ledger',
  },
  ledger: { type: 'string', describe: "act on this ledger file instead of a root's" },
} as const;

export function ledgerPathFromArgs(args: LedgerTargetArgs, ctx: CliContext): string {
  if (typeof args.ledger === 'string' && args.ledger.length > 0) return resolve(ctx.cwd, args.ledger);
  return ledgerPathForRoot(resolveRoot(args.root, ctx));
}

/** Open the ledger the arguments name, run `fn`, and always close it. */
export function withLedger<T>(
  args: LedgerTargetArgs,
  ctx: CliContext,
  options: LedgerOptions,
  fn: (ledger: Ledger) => T,
): T {
  const ledger = Ledger.open(ledgerPathFromArgs(args, ctx), options);
  try {
    return fn(ledger);
  } finally {
    ledger.close();
  }
}

/**
 * `--store URL`: the chain in a PostgreSQL store instead of the root's file. Only when given: a root whose gateway
 * runs on a store still records its own governance (config, installs) in its SQLite file.
 */
export function storeOption(what: string) {
  return {
    store: {
      type: 'string',
      conflicts: ['ledger'],
      describe: `${what} in this PostgreSQL store instead (postgres://user@host/db, no password)`,
    },
  } as const;
}

/** Open the PostgreSQL store at `url` (one connection), run `fn`, and always close it. */
export async function withPgLedger<T>(
  url: string,
  fn: (store: PgLedger) => Promise<T>,
  options: { create?: boolean } = {},
): Promise<T> {
  const store = await PgLedger.open(url, { poolSize: 1, ...options });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** One line per entry for humans: seq-free, newest data last. */
export function entryLine(entry: LedgerEntry): string {
  return `${entry.id}  ${entry.timestamp}  ${entry.event_type}  ${entry.submission_id}  ${entry.decision}  ${entry.reason}`;
}
