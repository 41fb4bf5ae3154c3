import { withRootSession } from '../../kernel/installer/session.js';
import { uninstallOne } from '../../kernel/installer/uninstall.js';
import { defineCommand, EXIT } from '../command.js';
import { repairLines } from '../../kernel/installer/report.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'uninstall',
  describe: 'remove an installed package (refused while another package depends on it)',
  positionals: { package: { type: 'string', demandOption: true, describe: 'the package id, e.g. PKG-ROUTER-001' } },
  options: rootOption('the cplane root'),
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    return withRootSession(root, {}, async (session) => {
      const outcome = await uninstallOne(session, args.package);
      ctx.report(args, { root, repair: session.repair, ...outcome }, [
        ...repairLines(session.repair),
        `uninstalled ${outcome.package_id} ${outcome.version}: ${outcome.removed} files removed`,
      ]);
      return EXIT.OK;
    });
  },
});
