import { resolve } from 'node:path';
import { installOne } from '../../kernel/installer/install.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { defineCommand, EXIT } from '../command.js';
import { INSTALL_OPTIONS } from '../install-options.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { outcomeJson, outcomeLine, repairLines } from '../../kernel/installer/report.js';

export default defineCommand({
  name: 'install',
  describe: 'install one package archive into a root (every check passes before anything is written)',
  positionals: {
    archive: { type: 'string', demandOption: true, describe: 'a package archive (PKG-NAME-NNN-<version>.tar.gz)' },
  },
  options: {
    ...rootOption('the cplane root to install into'),
    ...INSTALL_OPTIONS,
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const archivePath = resolve(ctx.cwd, args.archive);
    return withRootSession(root, {}, async (session) => {
      const outcome = await installOne(session, { archivePath, mode: 'install', expectId: args.id, dev: args.dev });
      ctx.report(args, { root, repair: session.repair, ...outcomeJson(outcome) }, [
        ...repairLines(session.repair),
        outcomeLine(outcome),
      ]);
      return EXIT.OK;
    });
  },
});
