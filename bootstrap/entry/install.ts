#!/usr/bin/env node
// CP_BOOTSTRAP installer entry (Node built-ins only: nothing is installed yet).
//   node install.js --root R [--dev] [--trust KEY.pub]…
// 1. check every archive against bootstrap.json; 2. refuse a non-empty root; 3. unpack what the layer-0 kernel's
// installer loads (from genesis, runtime, kernel) into a temporary directory inside the root and run THAT
// kernel's installer (in a child process) to create the root and install them properly; 4. run the INSTALLED
// kernel's installer, in this process, for every other package in bootstrap.json order.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { checkArchives, readBootstrapPlan, type BootstrapPackage, type BootstrapPlan } from './plan.js';
import type { GenesisRequest } from './genesis.js';
import { ImportReach } from './reach.js';
import { readTarGz, TarError } from './tar.js';

const here = dirname(fileURLToPath(import.meta.url));
const say = (line: string): void => { process.stdout.write(`${line}\n`); };

/** The layer-0 kernel's installer entry (runInstallEntry), as the genesis child imports it. */
const INSTALLER = 'HOT/kernel/installer/entry.js';

/** Unpack what the layer-0 kernel's installer loads (its import graph), nothing else: see reach.ts. */
function extractInstaller(archives: readonly Buffer[], into: string): void {
  const files = new Map<string, Buffer>();
  for (const data of archives) {
    for (const file of readTarGz(data)) {
      if (!file.path.startsWith('HOT/')) continue; // manifest.json, signature.json: the installer's to read
      if (files.has(file.path)) throw new TarError('ERR_BOOTSTRAP_INVALID', `two layer-0 archives ship ${JSON.stringify(file.path)}`);
      files.set(file.path, file.data);
    }
  }
  if (!files.has(INSTALLER)) throw new TarError('ERR_BOOTSTRAP_INVALID', `no layer-0 package ships ${INSTALLER}`);
  const made = new Set<string>();
  for (const path of new ImportReach(files).from(INSTALLER)) {
    const target = join(into, path);
    if (!made.has(dirname(target))) {
      mkdirSync(dirname(target), { recursive: true });
      made.add(dirname(target));
    }
    writeFileSync(target, files.get(path) as Buffer, { flag: 'wx' });
  }
}

/**
 * Genesis runs in a child process, so that however it dies, this entry is left to remove the half-made root.
 * It is started first and told what to run once the kernel is unpacked (genesis.ts): Node's start-up then
 * overlaps checking and unpacking instead of following them.
 */
class GenesisChild {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number>;

  constructor() {
    this.child = spawn(process.execPath, [join(here, 'genesis.js')], { stdio: ['pipe', 'inherit', 'inherit'] });
    this.exited = new Promise((done) => {
      this.child.on('exit', (code) => { done(code ?? 1); });
      this.child.on('error', () => { done(1); });
    });
    this.child.stdin?.on('error', () => {}); // a child that died early shows in its exit code
  }

  run(request: GenesisRequest): Promise<number> {
    this.child.stdin?.end(JSON.stringify(request));
    return this.exited;
  }

  /** The entry stopped before genesis: the child exits without doing anything. */
  async cancel(): Promise<void> {
    this.child.stdin?.end();
    await this.exited;
  }
}

/** The part of the installed kernel's installer entry (HOT/kernel/installer/entry.js) that bootstrap calls. */
interface InstalledInstaller {
  runInstallEntry(options: { argv: readonly string[]; hot: string; defaultRoot: string }): Promise<number>;
}

/**
 * The rest runs in this process, on the installed kernel's code (loaded from the root, so one copy of the
 * kernel and its SQLite is ever loaded here): a second Node process would only add its start-up time.
 */
async function runInstalledKernel(root: string, args: string[]): Promise<number> {
  const hot = join(root, 'HOT');
  const installer = await import(pathToFileURL(join(hot, 'kernel', 'installer', 'entry.js')).href) as InstalledInstaller;
  return installer.runInstallEntry({ argv: args, hot, defaultRoot: root });
}

const archivePath = (p: BootstrapPackage): string => join(here, 'packages', p.file);
const common = (values: { dev?: boolean | undefined }): string[] => (values.dev ? ['--dev'] : []);

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
  const child = new GenesisChild();
  let request: GenesisRequest | null = null;
  let tmp: string | null = null;
  let existed = false;
  let plan: BootstrapPlan;
  try {
    plan = readBootstrapPlan(here);
    const archives = checkArchives(here, plan);
    say(`CP_BOOTSTRAP ${plan.bootstrap_version}: ${plan.packages.length} archives match bootstrap.json`);
    existed = existsSync(root);
    if (existed && readdirSync(root).length > 0) {
      throw new TarError('ERR_ROOT_NOT_EMPTY', `${JSON.stringify(root)} is not empty; bootstrap needs a new or empty directory`);
    }
    const genesis = plan.packages.filter((p) => p.layer === 0);
    mkdirSync(root, { recursive: true });
    tmp = join(root, `.cplane-genesis-${randomBytes(4).toString('hex')}`);
    extractInstaller(genesis.map((pkg) => archives.get(pkg.package_id) as Buffer), tmp);
    request = {
      module: join(tmp, INSTALLER), hot: join(tmp, 'HOT'), defaultRoot: root,
      argv: ['--genesis', '--root', root, '--bootstrap-version', plan.bootstrap_version, ...common(values),
        ...(values.trust ?? []).flatMap((f) => ['--trust', resolve(f)]), ...genesis.map(archivePath)],
    };
    say(`genesis: ${genesis.map((p) => `${p.package_id} ${p.version}`).join(', ')}`);
  } catch (error) {
    await child.cancel();
    if (tmp !== null) rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
  let status = await child.run(request);
  if (status !== 0) {
    // Genesis is all or nothing: a root without its kernel is not a root, so nothing of it is kept.
    if (existed) for (const name of readdirSync(root)) rmSync(join(root, name), { recursive: true, force: true });
    else rmSync(root, { recursive: true, force: true });
    say(`genesis failed (exit ${status}); the root was removed`);
    return status;
  }
  // The genesis kernel's files go while the installed kernel works (nothing reads them any more); both are
  // waited for before the entry reports.
  const removal = rm(tmp, { recursive: true, force: true });
  const rest = plan.packages.filter((p) => p.layer !== 0);
  try {
    if (rest.length > 0) {
      say(`installing ${rest.length} more package(s) with the installed kernel`);
      status = await runInstalledKernel(root, ['--root', root, ...common(values), ...rest.map(archivePath)]);
      if (status !== 0) {
        say(`bootstrap stopped (exit ${status}); packages installed before the failing one remain installed and verifiable`);
        return status;
      }
    }
  } finally {
    await removal;
  }
  say(`bootstrap complete: ${plan.packages.length} packages in ${Date.now() - started} ms; root ${root}`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  const code = error instanceof TarError ? error.code : 'ERR_BOOTSTRAP';
  process.stderr.write(`cplane: ${code}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 3;
}
