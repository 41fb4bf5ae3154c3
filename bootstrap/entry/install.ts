#!/usr/bin/env node
// CP_BOOTSTRAP installer entry (Node built-ins only until the checks pass).
//   node install.js --root R [--dev] [--trust KEY.pub]…
// 1. check every archive and every genesis file against bootstrap.json; 2. refuse a non-empty root (one holding
// only an interrupted genesis is cleared) and mark it; 3. genesis: run the layer-0 kernel's installer, shipped
// unpacked under genesis/, to create the root and install the layer-0 packages properly, then unmark the root;
// 4. run the INSTALLED kernel's installer, from the root, for every other package in bootstrap.json order. From
// genesis until the last package the root holds HOT/registries/bootstrap-pending.json (verify and G2 report it);
// `--resume`, or bootstrapping into such a root again, repairs it and installs the packages it still lacks.
// Everything runs in this one process: each Node start-up costs more than the work it would overlap.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { BootstrapError } from './errors.js';
import { checkArchives, readBootstrapPlan, type BootstrapPackage } from './plan.js';
import {
  clearPending,
  dropGenesisMark,
  prepareRoot,
  readPending,
  removeRoot,
  unmarkRoot,
  writePending,
  GENESIS_MARK,
} from './root.js';
import { GENESIS_DIR, verifyGenesis } from './verify-genesis.js';

const here = dirname(fileURLToPath(import.meta.url));
const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** What bootstrap calls of a kernel's installer entry (HOT/kernel/installer/entry.js). */
interface KernelInstaller {
  runInstallEntry(options: {
    argv: readonly string[];
    hot: string;
    defaultRoot: string;
    genesisAllow?: readonly string[];
    crash?: ((step: string, packageId: string) => void) | undefined;
    integrity?: ReadonlyMap<string, string>;
  }): Promise<number>;
  testCrashHook(spec: string | undefined): ((step: string, packageId: string) => void) | undefined;
}

/** `entry` is root-relative (HOT/kernel/installer/entry.js), the same under genesis/ and in the root. */
async function loadInstaller(base: string, entry: string): Promise<KernelInstaller> {
  return (await import(pathToFileURL(join(base, entry)).href)) as KernelInstaller;
}

const archivePath = (p: BootstrapPackage): string => join(here, 'packages', p.file);
/** bootstrap.json's pins, which the kernel's installer checks again (with ssri) as it reads each archive. */
const pins = (packages: readonly BootstrapPackage[]): Map<string, string> =>
  new Map(packages.map((p) => [archivePath(p), p.integrity]));

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: {
      root: { type: 'string' },
      dev: { type: 'boolean' },
      resume: { type: 'boolean' },
      trust: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !values.root) {
    say('usage: node install.js --root ROOT [--dev] [--resume] [--trust KEY.pub]…');
    return values.help ? 0 : 2;
  }
  const root = resolve(values.root);
  const started = Date.now();
  const common = values.dev ? ['--dev'] : [];
  const plan = readBootstrapPlan(here);
  checkArchives(here, plan);
  verifyGenesis(here, plan.genesis);
  say(
    `CP_BOOTSTRAP ${plan.bootstrap_version}: ${plan.packages.length} archives and ${plan.genesis.files.length} genesis files match bootstrap.json`,
  );
  const rest = plan.packages.filter((p) => p.layer !== 0);
  const pending = readPending(root);
  if (values.resume && pending === null) {
    throw new BootstrapError(
      'ERR_BOOTSTRAP_NOT_RESUMABLE',
      `${JSON.stringify(root)} holds no unfinished bootstrap (no HOT/registries/bootstrap-pending.json)`,
      'bootstrap a new root without --resume; a finished root takes single packages with its HOT/scripts/install.js',
    );
  }
  if (pending !== null && pending !== plan.bootstrap_version) {
    throw new BootstrapError(
      'ERR_BOOTSTRAP_NOT_RESUMABLE',
      `${JSON.stringify(root)} holds an unfinished bootstrap of CP_BOOTSTRAP ${pending}; this is ${plan.bootstrap_version}`,
      `resume it with CP_BOOTSTRAP ${pending}`,
    );
  }
  let todo = rest;
  if (pending !== null) {
    dropGenesisMark(root);
    todo = await stillToInstall(root, plan.genesis.entry, rest);
    say(`resuming the unfinished bootstrap of ${root}: ${todo.length} of ${rest.length} package(s) still to install`);
  } else {
    const status = await genesis(root, plan, values.trust ?? [], common);
    if (status !== 0) return status;
    // Before the mark goes: from here on a kill leaves a root that says it is unfinished, never one that looks complete.
    if (rest.length > 0) writePending(root, plan.bootstrap_version, rest);
    unmarkRoot(root);
  }

  if (todo.length > 0) {
    say(`installing ${todo.length} more package(s) with the installed kernel`);
    const installed = await loadInstaller(root, plan.genesis.entry);
    const status = await installed.runInstallEntry({
      argv: ['--root', root, ...common, ...todo.map(archivePath)],
      hot: join(root, 'HOT'),
      defaultRoot: root,
      integrity: pins(todo),
      crash: installed.testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
    });
    if (status !== 0) {
      say(
        `bootstrap stopped (exit ${status}); packages installed before the failing one remain installed and verifiable; the root is marked unfinished until \`cplane bootstrap --resume\` completes it`,
      );
      return status;
    }
  }
  if (rest.length > 0) clearPending(root);
  say(`bootstrap complete: ${plan.packages.length} packages in ${Date.now() - started} ms; root ${root}`);
  return 0;
}

/** Genesis into a new or emptied root; a failed genesis removes what it made. */
async function genesis(
  root: string,
  plan: ReturnType<typeof readBootstrapPlan>,
  trust: readonly string[],
  common: readonly string[],
): Promise<number> {
  const prepared = prepareRoot(root, plan.bootstrap_version);
  if (prepared.cleared.length > 0) say(`removed an interrupted genesis from ${root} (${GENESIS_MARK}); starting again`);
  const layer0 = plan.packages.filter((p) => p.layer === 0);
  say(`genesis: ${layer0.map((p) => `${p.package_id} ${p.version}`).join(', ')}`);
  const hot = join(here, GENESIS_DIR, 'HOT');
  let status: number;
  try {
    const installer = await loadInstaller(join(here, GENESIS_DIR), plan.genesis.entry);
    status = await installer.runInstallEntry({
      argv: [
        '--genesis',
        '--root',
        root,
        '--bootstrap-version',
        plan.bootstrap_version,
        ...common,
        ...trust.flatMap((f) => ['--trust', resolve(f)]),
        ...layer0.map(archivePath),
      ],
      hot,
      defaultRoot: root,
      genesisAllow: [GENESIS_MARK],
      integrity: pins(layer0),
      crash: installer.testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
    });
  } catch (error) {
    removeRoot(prepared);
    throw error;
  }
  if (status !== 0) {
    removeRoot(prepared);
    say(`genesis failed (exit ${status}); the root was removed`);
  }
  return status;
}

/**
 * The packages of an unfinished bootstrap not yet installed at their planned version. The installed kernel
 * first repairs the root (a package killed mid-commit is rolled forward or back), so its receipts are final.
 */
async function stillToInstall(
  root: string,
  entry: string,
  rest: readonly BootstrapPackage[],
): Promise<BootstrapPackage[]> {
  const session = (await import(pathToFileURL(join(root, dirname(entry), 'session.js')).href)) as {
    openRootSession(root: string): Promise<{ close(): void }>;
  };
  (await session.openRootSession(root)).close();
  const version = (id: string): string | null => {
    try {
      return (
        (JSON.parse(readFileSync(join(root, 'HOT', 'installed', id, 'receipt.json'), 'utf8')) as { version?: string })
          .version ?? null
      );
    } catch {
      return null;
    }
  };
  return rest.filter((p) => version(p.package_id) !== p.version);
}

try {
  process.exitCode = await main();
} catch (error) {
  const code = error instanceof BootstrapError ? error.code : 'ERR_BOOTSTRAP';
  const hint = error instanceof BootstrapError ? `\n  hint: ${error.hint}` : '';
  process.stderr.write(`cplane: ${code}: ${error instanceof Error ? error.message : String(error)}${hint}\n`);
  process.exitCode = 3;
}
