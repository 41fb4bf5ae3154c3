import { withRootSession } from '../../kernel/installer/session.js';
import { uninstallOne } from '../../kernel/installer/uninstall.js';
import { defineCommand } from '../command.js';
import { repairLines } from '../../kernel/installer/report.js';
import { resolveRoot } from '../root-option.js';

interface UninstallArgs {
  package: string;
  root?: string;
}

export default defineCommand<UninstallArgs>({
  command: 'uninstall <package>',
  describe: 'remove an installed package (refused while another package depends on it)',
  builder: (y) =>
    y
      .positional('package', { type: 'string', demandOption: true, describe: 'the package id, e.g. PKG-ROUTER-001' })
      .option('root', { type: 'string', describe: 'the cplane root' }) as never,
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    return withRootSession(root, {}, async (session) => {
      const outcome = await uninstallOne(session, args.package);
      ctx.report(args, { root, repair: session.repair, ...outcome }, [
        ...repairLines(session.repair),
        `uninstalled ${outcome.package_id} ${outcome.version}: ${outcome.removed} files removed`,
      ]);
      return 0;
    });
  },
});
