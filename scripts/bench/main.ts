// `npm run bench [-- --json] [--quick] [--only NAME]`: every suite in ./suites, printed as a table or JSON.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchRow, BenchSuite } from './row.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const quick = args.includes('--quick');
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined;
const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

const suitesDir = join(dirname(fileURLToPath(import.meta.url)), 'suites');
const suites: BenchSuite[] = [];
for (const file of (existsSync(suitesDir) ? readdirSync(suitesDir) : []).filter((f) => f.endsWith('.js')).sort()) {
  const mod = (await import(pathToFileURL(join(suitesDir, file)).href)) as { default: BenchSuite };
  if (!only || mod.default.name === only) suites.push(mod.default);
}

const rows: BenchRow[] = [];
for (const suite of suites) {
  const tmp = mkdtempSync(join(tmpdir(), `cplane-bench-${suite.name}-`));
  try {
    log(`bench: ${suite.name}${quick ? ' (quick)' : ''}…`);
    rows.push(...(await suite.run({ quick, tmp, log })));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const fmt = (n: number | null): string => (n === null ? '-' : Math.abs(n) >= 1000 ? n.toFixed(0) : n.toPrecision(4));
if (json) {
  process.stdout.write(
    `${JSON.stringify({ quick, rows: rows.map(({ name, value, unit, baseline, ratio, target, ok }) => ({ name, value, unit, baseline, ratio, target, ok })) }, null, 2)}\n`,
  );
} else {
  const table = [
    ['name', 'value', 'unit', 'baseline', 'ratio', 'target', 'met'],
    ...rows.map((r) => [
      r.name,
      fmt(r.value),
      r.unit,
      fmt(r.baseline),
      fmt(r.ratio),
      r.target,
      r.ok === null ? '-' : r.ok ? 'yes' : 'NO',
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}\n`);
}
