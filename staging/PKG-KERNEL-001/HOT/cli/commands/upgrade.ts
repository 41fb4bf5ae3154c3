import { resolve } from 'node:path';
import { installOne } from '../../kernel/installer/install.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { defineCommand } from '../command.js';
import { outcomeJson, outcomeLine, repairLines } from '../../kernel/installer/report.js';
import { resolveRoot } from '../root-option.js';

interface UpgradeArgs {
  archive: string;
  root?: string;
  dev?: boolean;
  id?: string;
  allowDowngrade?: boolean;
}

export default defineCommand<UpgradeArgs>({
  command: 'upgrade <archive>',
  describe: "upgrade an installed package to the archive's version (same version: a no-op that says so)",
  builder: (y) =>
    y
      .positional('archive', { type: 'string', demandOption: true, describe: 'a package archive of a newer version' })
      .option('root', { type: 'string', describe: 'the cplane root' })
      .option('dev', {
        type: 'boolean',
        default: false,
        describe: 'waive the signature check (recorded in the ledger and the receipt)',
      })
      .option('id', { type: 'string', describe: 'refuse unless the archive is this package id' })
      .option('allow-downgrade', {
        type: 'boolean',
        default: false,
        describe: 'allow installing an older version than the installed one',
      }) as never,
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    return withRootSession(root, {}, async (session) => {
      const outcome = await installOne(session, {
        archivePath: resolve(ctx.cwd, args.archive),
        mode: 'upgrade',
        expectId: args.id,
        dev: args.dev,
        allowDowngrade: args.allowDowngrade,
      });
      ctx.report(args, { root, repair: session.repair, ...outcomeJson(outcome) }, [
        ...repairLines(session.repair),
        outcomeLine(outcome),
      ]);
      return 0;
    });
  },
});
