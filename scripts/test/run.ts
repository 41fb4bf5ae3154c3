// `npm test`: every package's tests (from the dev root) and the repository's tests, under c8.
// Kernel code must keep ≥ 90% line coverage.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DEV_ROOT, REPO, TSC_OUT } from '../lib/repo.js';
import { LAYOUT } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

function findTests(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const abs = join(dir, name);
    if (statSync(abs).isDirectory()) out.push(...findTests(abs));
    else if (name.endsWith('.test.js')) out.push(abs);
  }
  return out;
}

/** tsc never deletes the output of a deleted source: a compiled test whose .ts is gone is not a test any more. */
const hasSource = (abs: string): boolean => existsSync(join(REPO, relative(TSC_OUT, abs)).replace(/\.js$/, '.ts'));

const filter = process.argv.slice(2);
const files = [...findTests(join(DEV_ROOT, LAYOUT.tests)), ...findTests(join(TSC_OUT, 'test')).filter(hasSource)]
  .map((abs) => relative(REPO, abs))
  .filter((rel) => filter.length === 0 || filter.some((f) => rel.includes(f)));
if (files.length === 0) {
  process.stderr.write('no test files found; run `npm run build` first\n');
  process.exit(1);
}

const c8 = join(REPO, 'node_modules', 'c8', 'bin', 'c8.js');
// c8 merges every test process's V8 coverage in memory: with ~1,500 tests over a root of ~2,000 files that passes
// Node's default heap, so c8 itself (not the tests it runs) gets a larger one.
const C8_HEAP = '--max-old-space-size=8192';
const run = (args: string[]): number =>
  spawnSync(process.execPath, [C8_HEAP, ...args], { cwd: REPO, stdio: 'inherit' }).status ?? 1;

const testStatus = run([
  c8,
  '--reporter=text-summary',
  '--reporter=json-summary',
  '--report-dir=coverage',
  '--temp-directory=coverage/tmp',
  '--all',
  '--src=build/root/HOT',
  '--include=build/root/HOT/**',
  '--exclude=build/root/HOT/tests/**',
  '--exclude=build/root/HOT/node_modules/**',
  process.execPath,
  '--test',
  '--test-concurrency=2',
  '--test-reporter=spec',
  ...files,
]);
let coverageStatus = 0;
if (filter.length === 0) {
  process.stdout.write('\nkernel coverage (lines ≥ 90%):\n');
  coverageStatus = run([
    c8,
    'report',
    '--reporter=text-summary',
    '--temp-directory=coverage/tmp',
    '--report-dir=coverage/kernel',
    '--all',
    '--src=build/root/HOT',
    '--include=build/root/HOT/kernel/**',
    '--check-coverage',
    '--lines=90',
  ]);
}
process.exit(testStatus !== 0 ? testStatus : coverageStatus);
