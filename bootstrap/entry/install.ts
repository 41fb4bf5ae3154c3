#!/usr/bin/env node
// CP_BOOTSTRAP installer entry (Node built-ins only until the checks pass).
//   node install.js --root R [--dev] [--trust KEY.pub]…
// 1. check every archive and every genesis file against bootstrap.json; 2. refuse a non-empty root (one holding
// only an interrupted genesis is cleared) and mark it; 3. genesis: run the layer-0 kernel's installer, shipped
// unpacked under genesis/, to create the root and install the layer-0 packages properly, then unmark the root;
// 4. run the INSTALLED kernel's installer, from the root, for every other package in bootstrap.json order.
// Everything runs in this one process: each Node start-up costs more than the work it would overlap.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { BootstrapError } from './errors.js';
import { checkArchives, readBootstrapPlan, type BootstrapPackage } from './plan.js';
import { prepareRoot, removeRoot, unmarkRoot, GENESIS_MARK } from './root.js';
import { GENESIS_DIR, verifyGenesis } from './verify-genesis.js';

const here = dirname(fileURLToPath(import.meta.url));
const say = (line: string): void => { process.stdout.write(`${line}\n`); };

/** What bootstrap calls of a kernel's installer entry (HOT/kernel/installer/entry.js). */
interface KernelInstaller {
  runInstallEntry(options: {
    argv: readonly string[]; hot: string; defaultRoot: string; genesisAllow?: readonly string[];
    crash?: ((step: string, packageId: string) => void) | undefined;
  }): Promise<number>;
  testCrashHook(spec: string | undefined): ((step: string, packageId: string) => void) | undefined;
}

/** `entry` is root-relative (HOT/kernel/installer/entry.js), the same under genesis/ and in the root. */
async function loadInstaller(base: string, entry: string): Promise<KernelInstaller> {
  return await import(pathToFileURL(join(base, entry)).href) as KernelInstaller;
}

const archivePath = (p: BootstrapPackage): string => join(here, 'packages', p.file);

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2), strict: true,
    options: { root: { type: 'string' }, dev: { type: 'boolean' }, trust: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || !values.root) {
    say('usage: node install.js --root ROOT [--dev] [--trust KEY.pub]…');
    return values.help ? 0 : 2;
  }
  const root = resolve(values.root);
  const started = Date.now();
  const common = values.dev ? ['--dev'] : [];
  const plan = readBootstrapPlan(here);
  checkArchives(here, plan);
  verifyGenesis(here, plan.genesis);
  say(`CP_BOOTSTRAP ${plan.bootstrap_version}: ${plan.packages.length} archives and ${plan.genesis.files.length} genesis files match bootstrap.json`);
  const prepared = prepareRoot(root, plan.bootstrap_version);
  if (prepared.cleared.length > 0) say(`removed an interrupted genesis from ${root} (${GENESIS_MARK}); starting again`);

  const genesis = plan.packages.filter((p) => p.layer === 0);
  say(`genesis: ${genesis.map((p) => `${p.package_id} ${p.version}`).join(', ')}`);
  const hot = join(here, GENESIS_DIR, 'HOT');
  let status: number;
  try {
    const installer = await loadInstaller(join(here, GENESIS_DIR), plan.genesis.entry);
    status = await installer.runInstallEntry({
      argv: ['--genesis', '--root', root, '--bootstrap-version', plan.bootstrap_version, ...common,
        ...(values.trust ?? []).flatMap((f) => ['--trust', resolve(f)]), ...genesis.map(archivePath)],
      hot, defaultRoot: root, genesisAllow: [GENESIS_MARK], crash: installer.testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
    });
  } catch (error) {
    removeRoot(prepared);
    throw error;
  }
  if (status !== 0) {
    removeRoot(prepared);
    say(`genesis failed (exit ${status}); the root was removed`);
    return status;
  }
  unmarkRoot(root);

  const rest = plan.packages.filter((p) => p.layer !== 0);
  if (rest.length > 0) {
    say(`installing ${rest.length} more package(s) with the installed kernel`);
    const installed = await loadInstaller(root, plan.genesis.entry);
    status = await installed.runInstallEntry({
      argv: ['--root', root, ...common, ...rest.map(archivePath)], hot: join(root, 'HOT'), defaultRoot: root,
      crash: installed.testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
    });
    if (status !== 0) {
      say(`bootstrap stopped (exit ${status}); packages installed before the failing one remain installed and verifiable`);
      return status;
    }
  }
  say(`bootstrap complete: ${plan.packages.length} packages in ${Date.now() - started} ms; root ${root}`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  const code = error instanceof BootstrapError ? error.code : 'ERR_BOOTSTRAP';
  const hint = error instanceof BootstrapError ? `\n  hint: ${error.hint}` : '';
  process.stderr.write(`cplane: ${code}: ${error instanceof Error ? error.message : String(error)}${hint}\n`);
  process.exitCode = 3;
}
