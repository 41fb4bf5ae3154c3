import { resolve } from 'node:path';
import { installOne } from '../../kernel/installer/install.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { defineCommand, EXIT } from '../command.js';
import { INSTALL_OPTIONS } from '../install-options.js';
import { outcomeJson, outcomeLine, repairLines } from '../../kernel/installer/report.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'upgrade',
  describe: "upgrade an installed package to the archive's version (same version: a no-op that says so)",
  positionals: {
    archive: { type: 'string', demandOption: true, describe: 'a package archive of a newer version' },
  },
  options: {
    ...rootOption('the cplane root'),
    ...INSTALL_OPTIONS,
    'allow-downgrade': {
      type: 'boolean',
      default: false,
      describe: 'allow installing an older version than the installed one',
    },
  },
  async handler(args, ctx) {
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
      return EXIT.OK;
    });
  },
});
