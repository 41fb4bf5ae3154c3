import { quote } from '../../kernel/errors.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { verifyRoot } from '../../kernel/installer/verify.js';
import { defineCommand, EXIT } from '../command.js';
import { repairLines } from '../../kernel/installer/report.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'verify',
  describe: 're-hash every owned file against its receipt (like dpkg --verify); exit 1 on any mismatch',
  options: rootOption('the cplane root'),
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    return withRootSession(root, {}, (session) => {
      const result = verifyRoot(root);
      const lines = [...repairLines(session.repair)];
      for (const f of result.findings) {
        lines.push(
          `${f.problem.toUpperCase().padEnd(14)} ${quote(f.path)}  (${f.package_id ?? 'no owner'}${f.expected ? `: expected ${f.expected}, found ${f.actual ?? '-'}` : ''})`,
        );
      }
      lines.push(
        result.ok
          ? `OK: ${result.files} files of ${result.packages} packages match their receipts`
          : `FAILED: ${result.findings.length} problem(s) in ${result.files} files of ${result.packages} packages`,
      );
      ctx.report(args, { root, repair: session.repair, ...result }, lines);
      return result.ok ? EXIT.OK : EXIT.CHECK_FAILED;
    });
  },
});
