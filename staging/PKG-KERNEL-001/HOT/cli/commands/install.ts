import { resolve } from 'node:path';
import { installOne } from '../../kernel/installer/install.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { defineCommand } from '../command.js';
import { resolveRoot } from '../root-option.js';
import { outcomeJson, outcomeLine, repairLines } from '../../kernel/installer/report.js';

interface InstallArgs {
  archive: string;
  root?: string;
  dev?: boolean;
  id?: string;
}

export default defineCommand<InstallArgs>({
  command: 'install <archive>',
  describe: 'install one package archive into a root (every check passes before anything is written)',
  builder: (y) =>
    y
      .positional('archive', {
        type: 'string',
        demandOption: true,
        describe: 'a package archive (PKG-NAME-NNN-<version>.tar.gz)',
      })
      .option('root', { type: 'string', describe: 'the cplane root to install into' })
      .option('dev', {
        type: 'boolean',
        default: false,
        describe: 'waive the signature check (recorded in the ledger and the receipt)',
      })
      .option('id', { type: 'string', describe: 'refuse unless the archive is this package id' }) as never,
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const archivePath = resolve(ctx.cwd, args.archive);
    return withRootSession(root, {}, async (session) => {
      const outcome = await installOne(session, { archivePath, mode: 'install', expectId: args.id, dev: args.dev });
      ctx.report(args, { root, repair: session.repair, ...outcomeJson(outcome) }, [
        ...repairLines(session.repair),
        outcomeLine(outcome),
      ]);
      return 0;
    });
  },
});
