import { quote } from '../../kernel/errors.js';
import { withRootSession } from '../../kernel/installer/session.js';
import { verifyRoot } from '../../kernel/installer/verify.js';
import { defineCommand } from '../command.js';
import { repairLines } from '../../kernel/installer/report.js';
import { resolveRoot } from '../root-option.js';

interface VerifyArgs {
  root?: string;
}

export default defineCommand<VerifyArgs>({
  command: 'verify',
  describe: 're-hash every owned file against its receipt (like dpkg --verify); exit 1 on any mismatch',
  builder: (y) => y.option('root', { type: 'string', describe: 'the cplane root' }) as never,
  async run(args, ctx) {
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
      return result.ok ? 0 : 1;
    });
  },
});
