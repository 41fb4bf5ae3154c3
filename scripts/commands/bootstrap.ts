// `cplane bootstrap [CP_BOOTSTRAP file] --root R [--dev] [--resume] [--trust KEY.pub]`: unpack CP_BOOTSTRAP to a temporary
// directory and run its own install.js (the same entry a user runs by hand), so the repository adds nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import semver from 'semver';
import { defineCommand, exitCodeOf } from '../../staging/PKG-KERNEL-001/HOT/cli/command.js';
import { resolveRoot, rootOption } from '../../staging/PKG-KERNEL-001/HOT/cli/root-option.js';
import { CpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import { unpackBootstrap } from '../lib/unpack-bootstrap.js';

/** The newest CP_BOOTSTRAP-<version>.tar.gz in the repository's bootstrap/ directory. */
export function newestBootstrap(repo: string): string {
  const dir = join(repo, 'bootstrap');
  const found = (existsSync(dir) ? readdirSync(dir) : [])
    .map((name) => ({ name, version: /^CP_BOOTSTRAP-(.+)\.tar\.gz$/.exec(name)?.[1] }))
    .filter((f): f is { name: string; version: string } => f.version !== undefined && semver.valid(f.version) !== null)
    .sort((a, b) => semver.rcompare(a.version, b.version));
  if (!found[0]) {
    throw new CpError('ERR_BOOTSTRAP_NOT_FOUND', `no CP_BOOTSTRAP-<version>.tar.gz in ${show(dir)}`, {
      hint: 'run `cplane build` first, or name the CP_BOOTSTRAP file',
      details: { dir },
    });
  }
  return join(dir, found[0].name);
}

export default defineCommand({
  name: 'bootstrap',
  describe: 'create a root from CP_BOOTSTRAP: check every archive, run genesis, install all packages in order',
  positionals: {
    file: { type: 'string', describe: 'the CP_BOOTSTRAP archive (default: the newest in bootstrap/)' },
  },
  options: {
    ...rootOption('the new root (a new or empty directory)'),
    dev: { type: 'boolean', default: false, describe: 'waive signature checks (recorded in the ledger and receipts)' },
    resume: {
      type: 'boolean',
      default: false,
      describe: 'finish a bootstrap that stopped after genesis (refused when the root holds none)',
    },
    trust: { type: 'string', array: true, describe: 'a publisher public key (PEM) to trust before installing' },
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const file = args.file ? resolve(ctx.cwd, args.file) : newestBootstrap(ctx.repo ?? ctx.cwd);
    const tmp = mkdtempSync(join(tmpdir(), 'cplane-bootstrap-'));
    try {
      await unpackBootstrap(file, tmp);
      const entry = join(tmp, 'install.js');
      if (!existsSync(entry)) {
        throw new CpError('ERR_BOOTSTRAP_INVALID', `${show(file)} has no install.js at its top level`, {
          hint: 'rebuild it with cplane build',
          details: { file },
        });
      }
      const argv = [
        entry,
        '--root',
        root,
        ...(args.dev ? ['--dev'] : []),
        ...(args.resume ? ['--resume'] : []),
        ...(args.trust ?? []).flatMap((t) => ['--trust', resolve(ctx.cwd, t)]),
      ];
      const child = spawnSync(process.execPath, argv, { stdio: args.json ? 'pipe' : 'inherit', encoding: 'utf8' });
      if (args.json)
        ctx.report(
          args,
          {
            root,
            file,
            exit_code: child.status ?? 1,
            output: `${child.stdout ?? ''}${child.stderr ?? ''}`.split('\n').filter(Boolean),
          },
          '',
        );
      return exitCodeOf(child.status);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
});
