// `cplane build [--out DIR] [--bootstrap-out DIR] [--sign-key FILE]` (after `npm run build`).
import { READ_LIMITS, readTextBounded } from '../../staging/PKG-KERNEL-001/HOT/kernel/bounded-read.js';
import { join, resolve } from 'node:path';
import { defineCommand, EXIT } from '../../staging/PKG-KERNEL-001/HOT/cli/command.js';
import { buildPackages } from '../build/packages.js';
import { REPO } from '../lib/repo.js';

function readSigningKey(path: string | undefined): string | null {
  if (path === undefined || path === '') return null;
  return readTextBounded(path, {
    maxBytes: READ_LIMITS.key,
    what: 'the signing key',
    unreadableCode: 'ERR_KEY_INVALID',
    unreadableHint: 'pass the cplane-signing.key written by `cplane keys generate` (--sign-key or CPLANE_SIGNING_KEY)',
  });
}

export default defineCommand({
  name: 'build',
  describe:
    'pack every staged package into packages/<PKG>-<version>.tar.gz and assemble CP_BOOTSTRAP (run `npm run build` first)',
  options: {
    out: { type: 'string', describe: 'directory for package archives and index.json (default REPO/packages)' },
    'bootstrap-out': {
      type: 'string',
      describe: 'directory for CP_BOOTSTRAP-<version>.tar.gz (default REPO/bootstrap)',
    },
    'sign-key': {
      type: 'string',
      describe: 'ed25519 private key (PEM) to sign manifests with; default $CPLANE_SIGNING_KEY',
    },
  },
  async handler(args, ctx) {
    const repo = ctx.repo ?? REPO;
    const keyPath = args.signKey ?? ctx.env.CPLANE_SIGNING_KEY;
    const result = await buildPackages({
      repo,
      outDir: args.out ? resolve(ctx.cwd, args.out) : join(repo, 'packages'),
      bootstrapDir: args.bootstrapOut ? resolve(ctx.cwd, args.bootstrapOut) : join(repo, 'bootstrap'),
      signingKeyPem: readSigningKey(keyPath === undefined ? undefined : resolve(ctx.cwd, keyPath)),
      log: args.json ? () => {} : (line) => ctx.err(line),
    });
    const value = {
      packages: result.packages.map((p) => ({
        package_id: p.manifest.package_id,
        version: p.manifest.version,
        file: p.path,
        integrity: p.integrity,
        size: p.size,
        assets: p.manifest.assets.length,
        signed_by: p.signature?.key_id ?? null,
      })),
      skipped: result.skipped,
      index: result.index,
      bootstrap: {
        file: result.bootstrap.path,
        integrity: result.bootstrap.integrity,
        size: result.bootstrap.size,
        install_order: result.bootstrap.plan.install_order,
        entries: result.bootstrap.entries,
      },
    };
    ctx.report(args, value, [
      `built ${result.packages.length} packages, index ${result.index}${result.skipped.length ? ` (skipped without template: ${result.skipped.join(', ')})` : ''}`,
      `${result.bootstrap.path} ${result.bootstrap.integrity}`,
    ]);
    return EXIT.OK;
  },
});
