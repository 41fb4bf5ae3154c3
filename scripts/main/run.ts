// `npm run bootstrap [-- --root R] [--results FILE]`: the clean-room main job. Every step after the build
// runs the code installed in the root, as a user would, and RESULTS.md records what happened.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { integrityOf } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/integrity.js';
import { REPO } from '../lib/repo.js';
import { renderResults, type MainJobReport } from './results.js';
import { parseJson, run, testTotals, timed, type StepResult } from './steps.js';
import { rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? resolve(args[i + 1] as string) : fallback;
};
const root = option('--root', join(REPO, '.cp-root'));
const resultsPath = option('--results', join(REPO, 'RESULTS.md'));
const keysDir = join(REPO, 'build', 'keys');
const cplane = (argv: string[]) =>
  run(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...argv], { cwd: REPO, echo: true });
const inRoot = (script: string, argv: string[]) =>
  run(process.execPath, [join(rootPaths(root).scripts, script), ...argv], { cwd: tmpdir(), echo: false });

const steps: StepResult[] = [];
const report: Partial<MainJobReport> = { root: relative(REPO, root) || root };
const log = (line: string): void => {
  process.stderr.write(`main: ${line}\n`);
};

async function step(name: string, fn: () => string | Promise<string>): Promise<boolean> {
  log(`${name}…`);
  try {
    const { value, ms } = await timed(fn);
    steps.push({ name, ok: true, ms, detail: value });
    log(`${name}: ok (${ms} ms) ${value}`);
    return true;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    steps.push({ name, ok: false, ms: 0, detail });
    log(`${name}: FAILED ${detail}`);
    return false;
  }
}

function must(captured: { status: number; stdout: string; stderr: string }, what: string): string {
  if (captured.status !== 0)
    throw new Error(`${what} exited ${captured.status}: ${(captured.stderr || captured.stdout).trim().slice(-2000)}`);
  return captured.stdout;
}

/** Ownership transfers (through `replaces`) as the receipts record them. */
function countTransfers(rootDir: string): number {
  const installed = rootPaths(rootDir).installed;
  return readdirSync(installed).reduce((sum, pkg) => {
    const receipt = JSON.parse(readFileSync(join(installed, pkg, 'receipt.json'), 'utf8')) as {
      transferred_out?: unknown[];
    };
    return sum + (receipt.transferred_out?.length ?? 0);
  }, 0);
}

function findTests(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const abs = join(dir, name);
      return statSync(abs).isDirectory() ? findTests(abs) : name.endsWith('.test.js') ? [abs] : [];
    });
}

const ok =
  (await step('signing key', () => {
    if (!existsSync(join(keysDir, 'cplane-signing.key')))
      must(cplane(['keys', 'generate', '--out', keysDir]), 'keys generate');
    return relative(REPO, keysDir);
  })) &&
  (await step('build packages and CP_BOOTSTRAP', () => {
    const built = parseJson<{ bootstrap: { file: string; integrity: string } }>(
      must(cplane(['build', '--sign-key', join(keysDir, 'cplane-signing.key'), '--json']), 'cplane build'),
      'cplane build',
    );
    const file = resolve(REPO, built.bootstrap.file);
    const digest = integrityOf(readFileSync(file));
    if (digest !== built.bootstrap.integrity)
      throw new Error(`CP_BOOTSTRAP on disk is ${digest}, the build reported ${built.bootstrap.integrity}`);
    const version = /CP_BOOTSTRAP-(.+)\.tar\.gz$/.exec(file)?.[1] ?? 'unknown';
    report.bootstrap = { file: relative(REPO, file), version, digest };
    return `${report.bootstrap.file} ${report.bootstrap.digest}`;
  })) &&
  (await step('bootstrap a clean root', () => {
    rmSync(root, { recursive: true, force: true });
    must(
      cplane([
        'bootstrap',
        join(REPO, report.bootstrap!.file),
        '--root',
        root,
        '--trust',
        join(keysDir, 'cplane-signing.pub'),
      ]),
      'cplane bootstrap',
    );
    const packages = parseJson<{ packages: NonNullable<MainJobReport['packages']> }>(
      must(inRoot('cplane.js', ['list', '--root', root, '--json']), 'list'),
      'list',
    ).packages;
    report.packages = packages;
    return `${packages.length} packages into ${report.root}`;
  }));

if (ok) {
  await step('gate_check --all', () => {
    const gates = inRoot('gate_check.js', ['--root', root, '--all', '--json']);
    const results = parseJson<{ gates: NonNullable<MainJobReport['gates']> }>(gates.stdout, 'gate_check').gates;
    report.gates = results;
    if (gates.status !== 0)
      throw new Error(
        `gates failed: ${results
          .filter((g) => g.status === 'FAIL')
          .map((g) => g.id)
          .join(', ')}`,
      );
    return results.map((g) => `${g.id} ${g.status}`).join(', ');
  });
  await step('regression suite (installed tests)', () => {
    const files = findTests(rootPaths(root).tests);
    // A runner that inherits NODE_TEST_CONTEXT (this job itself under `node --test`) reports to its parent
    // instead of printing its summary; the regression suite is its own top-level run.
    const { NODE_TEST_CONTEXT: _nested, ...env } = process.env;
    const result = run(process.execPath, ['--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
      cwd: tmpdir(),
      env,
    });
    const totals = { files: files.length, ...testTotals(result.stdout) };
    report.regression = totals;
    if (!Number.isFinite(totals.tests) || totals.tests === 0)
      throw new Error(`no test totals in the runner's output (exit ${result.status}): ${result.stdout.slice(-500)}`);
    if (result.status !== 0)
      throw new Error(
        `${totals.failed} failed:\n${result.stdout
          .split('\n')
          .filter((l) => l.includes('✖'))
          .slice(0, 20)
          .join('\n')}`,
      );
    return `${totals.passed}/${totals.tests} passed in ${files.length} files`;
  });
  await step('smoke exchange', () => {
    const smoke = inRoot('cplane.js', ['smoke', '--root', root, '--json']);
    const result = parseJson<NonNullable<MainJobReport['smoke']>>(smoke.stdout, 'smoke');
    report.smoke = result;
    if (smoke.status !== 0) throw new Error(`smoke failed: ${result.message}`);
    return result.message;
  });
  await step('root state', () => {
    const head = parseJson<{ seq: number; hash: string }>(
      must(inRoot('cplane.js', ['ledger', 'head', '--root', root, '--json']), 'ledger head'),
      'ledger head',
    );
    const verified = parseJson<{ ok: boolean; files: number }>(
      must(inRoot('cplane.js', ['verify', '--root', root, '--json']), 'verify'),
      'verify',
    );
    report.ledger = { entries: head.seq, anchor: `${head.seq}:${head.hash}` };
    report.ownership = { files: verified.files, transfers: countTransfers(root), ok: verified.ok };
    return `ledger ${head.seq}:${head.hash}`;
  });
}

const failed = steps.filter((s) => !s.ok);
writeFileSync(
  resultsPath,
  renderResults({ ...report, steps, ok: failed.length === 0, date: new Date().toISOString() } as MainJobReport),
);
log(
  `${failed.length === 0 ? 'PASS' : 'FAIL'}: ${steps.length - failed.length}/${steps.length} steps ok; results in ${relative(REPO, resultsPath) || resultsPath}`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
