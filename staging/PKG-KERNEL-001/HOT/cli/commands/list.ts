import { withRootSession } from '../../kernel/installer/session.js';
import { installedPackages } from '../../kernel/registry/receipt.js';
import { defineCommand, EXIT } from '../command.js';
import { repairLines } from '../../kernel/installer/report.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'list',
  describe: 'list the packages installed in a root',
  options: rootOption('the cplane root'),
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    return withRootSession(root, {}, (session) => {
      const packages = installedPackages(root);
      const rows = [
        ['package', 'version', 'layer', 'files', 'signature', 'installed_at'],
        ...packages.map((p) => [
          p.package_id,
          p.version,
          String(p.layer),
          String(p.files),
          p.dev_waiver ? `${p.signature} (dev waiver)` : p.signature,
          p.installed_at,
        ]),
      ];
      const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
      const table = rows.map((r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
      ctx.report(args, { root, repair: session.repair, packages }, [
        ...repairLines(session.repair),
        ...(packages.length ? table : ['no packages installed']),
      ]);
      return EXIT.OK;
    });
  },
});
