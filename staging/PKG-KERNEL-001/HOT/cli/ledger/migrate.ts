import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CpError } from '../../kernel/errors.js';
import { importFound } from '../../kernel/loader/discover.js';
import { sha256Hex } from '../../kernel/canonical.js';
import {
  type Anchor,
  blockLine,
  type ContentBlockLine,
  type ContentListLine,
  type EntryRow,
  hashInputFromColumns,
  Ledger,
  verifyLedger,
  verifyStore,
} from '../../kernel/ledger/index.js';
import { PgLedger, refusePasswordInUrl } from '../../kernel/ledger/pg/pg-ledger.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot } from '../root-option.js';
import { LEDGER_TARGET_OPTIONS, ledgerPathFromArgs } from './target.js';

const CHUNK = 2000;

/** What the budgeter package provides to copy a root's budget; the kernel finds it in the running code's HOT, never imports it. */
interface BudgetMigrator {
  migrateRootBudget(
    root: string,
    url: string,
  ): Promise<{
    reservations: number;
    reservations_present: number;
    scopes: number;
    rate_windows: number;
    kept_records: number;
  } | null>;
}

/** The router package's: the root's revoked keys. */
interface RevocationMigrator {
  migrateRootRevocations(root: string, url: string): Promise<{ revoked: number; copied: number } | null>;
}

const BUDGET_MIGRATOR = join('budgeter', 'pg', 'migrate-budget.js');
const REVOCATION_MIGRATOR = join('router', 'pg', 'migrate-revocations.js');

async function loadMigrator<T>(hot: string, rel: string): Promise<T | null> {
  const path = join(hot, rel);
  return existsSync(path) ? ((await importFound(path)) as T) : null;
}

export default defineCommand({
  name: 'migrate',
  describe:
    "copy the ledger (every entry re-verified, its content, its id sequence) into a PostgreSQL store; the head hash, and so every checkpoint, stays the same; with a root, its budget's reservations too (each counted in its scopes' totals once, however many runs)",
  options: {
    ...LEDGER_TARGET_OPTIONS,
    to: {
      type: 'string',
      demandOption: true,
      describe: 'postgres://user@host:port/db (the password from PGPASSWORD or a .pgpass file, never the URL)',
    },
  },
  async handler(args, ctx) {
    refusePasswordInUrl(args.to);
    const ledger = Ledger.open(ledgerPathFromArgs(args, ctx), { readonly: true });
    try {
      const source = verifyLedger(ledger);
      if (!source.ok)
        throw new CpError(
          'ERR_LEDGER_MIGRATE_TARGET',
          `the source ledger does not verify (${source.first_bad?.message ?? 'content or schema problems'}); nothing was copied`,
          {
            hint: 'run `cplane ledger verify` and repair the source first',
          },
        );
      const target = await PgLedger.open(args.to, { create: true });
      try {
        let head: Anchor = await target.headAnchor();
        if (head.seq > source.head.seq || (head.seq > 0 && ledger.getBySeq(head.seq)?.entry_hash !== head.hash))
          throw new CpError(
            'ERR_LEDGER_MIGRATE_TARGET',
            `the target holds another chain (its head is #${head.seq} ${head.hash})`,
            {
              hint: 'migrate into an empty database, or one holding a prefix of this chain (an interrupted migration)',
              details: { target_head: head },
            },
          );
        const resumed = head.seq;
        if (head.seq === 0) {
          const start = ledger.db.prepare("SELECT value FROM ledger_meta WHERE key = 'id_start'").pluck().get() as
            | string
            | undefined;
          if (start !== undefined) await target.setIdStart(start);
        }
        // Content first (every block and node, whichever entries name them), in key order, then the entries.
        let copiedBlocks = 0;
        let copiedLists = 0;
        if (ledger.content.exists()) {
          const blockRows = ledger.db
            .prepare(
              'SELECT digest, size, text, redacted_by FROM content_blocks WHERE digest > ? ORDER BY digest LIMIT ?',
            )
            .raw();
          for (let after: Buffer = Buffer.alloc(0); ; ) {
            const chunk = blockRows.all(after, CHUNK) as [Buffer, number, unknown, string | null][];
            if (chunk.length === 0) break;
            // PostgreSQL keeps plain text (TOAST compresses large values itself): compressed blocks are inflated.
            const blocks: ContentBlockLine[] = chunk.map(([digest, size, stored, redactedBy]) =>
              blockLine(digest.toString('hex'), size, stored, redactedBy),
            );
            if (!(await target.appendRows(head, [], blocks, []))) throw moved();
            copiedBlocks += chunk.length;
            after = (chunk[chunk.length - 1] as unknown as [Buffer])[0];
          }
          const listRows = ledger.db
            .prepare('SELECT digest, parent, block FROM content_lists WHERE digest > ? ORDER BY digest LIMIT ?')
            .raw();
          for (let after: Buffer = Buffer.alloc(0); ; ) {
            const chunk = listRows.all(after, CHUNK) as [Buffer, Buffer, Buffer][];
            if (chunk.length === 0) break;
            const lists: ContentListLine[] = chunk.map(([digest, parent, block]) => ({
              digest: digest.toString('hex'),
              parent: parent.toString('hex'),
              block: block.toString('hex'),
            }));
            if (!(await target.appendRows(head, [], [], lists))) throw moved();
            copiedLists += chunk.length;
            after = (chunk[chunk.length - 1] as unknown as [Buffer])[0];
          }
        }
        let batch: EntryRow[] = [];
        const flush = async (): Promise<void> => {
          if (batch.length === 0) return;
          if (!(await target.appendRows(head, batch, [], []))) throw moved();
          const last = batch[batch.length - 1] as EntryRow;
          head = { seq: last.seq, hash: last.entry_hash };
          batch = [];
        };
        for (const row of ledger.rows(resumed + 1)) {
          // What verified at the start is what is copied: entries appended since wait for the next run.
          if (row.seq > source.head.seq) break;
          if (sha256Hex(hashInputFromColumns(row)) !== row.entry_hash)
            throw new CpError(
              'ERR_LEDGER_MIGRATE_TARGET',
              `entry ${row.id} (#${row.seq}) changed while it was copied`,
              {
                hint: 'stop writers on the source while migrating; rerun to continue from the target head',
              },
            );
          batch.push(row);
          if (batch.length === CHUNK) await flush();
        }
        await flush();
        const check = await verifyStore(target);
        if (!check.ok || check.head.hash !== source.head.hash)
          throw new CpError(
            'ERR_LEDGER_MIGRATE_TARGET',
            `the copy does not verify to the source head (${check.first_bad?.message ?? check.content_problems[0] ?? `head ${check.head.hash}`})`,
            {
              hint: 'the target was written by someone else meanwhile; migrate into an empty database',
            },
          );
        // The root's budget goes with its ledger: a gateway switched to PostgreSQL finds what was already spent.
        const ofRoot = typeof args.ledger !== 'string';
        const migrator = ofRoot ? await loadMigrator<BudgetMigrator>(ctx.hot, BUDGET_MIGRATOR) : null;
        const budget = migrator ? await migrator.migrateRootBudget(resolveRoot(args.root, ctx), args.to) : null;
        // So do its revoked keys: a key revoked before the switch stays revoked on every host.
        const revoker = ofRoot ? await loadMigrator<RevocationMigrator>(ctx.hot, REVOCATION_MIGRATOR) : null;
        const revocations = revoker ? await revoker.migrateRootRevocations(resolveRoot(args.root, ctx), args.to) : null;
        const result = {
          entries: check.entries,
          copied: check.entries - resumed,
          blocks: copiedBlocks,
          lists: copiedLists,
          head: check.head,
          budget,
          revocations,
        };
        ctx.report(args, result, [
          `migrated ${result.copied} entries (${result.entries} in the target), ${copiedBlocks} content blocks, ${copiedLists} list nodes`,
          `head #${check.head.seq} ${check.head.hash} (the same as the source: its checkpoints hold)`,
          budget === null
            ? 'no budget to copy'
            : `budget: ${budget.reservations} reservations copied (${budget.reservations_present} already there), ${budget.scopes} scopes charged, ${budget.rate_windows} rate windows, ${budget.kept_records} kept ledger records (delivered by the store's reconciliation)`,
          revocations === null
            ? 'no revocation list to copy'
            : `revoked keys: ${revocations.copied} copied (${revocations.revoked} in the root's list)`,
        ]);
        return EXIT.OK;
      } finally {
        await target.close();
      }
    } finally {
      ledger.close();
    }
  },
});

function moved(): CpError {
  return new CpError('ERR_LEDGER_MIGRATE_TARGET', 'another writer appended to the target during the migration', {
    hint: 'migrate into a database no gateway writes to yet',
  });
}
