// `npm run bench [-- --json] [--quick] [--only NAME[,NAME…]] [--check]`: every suite in ./suites, printed as a
// table or JSON. With --check, the rows short of their target are listed after the table and the exit code is 1.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchRow, BenchSuite } from './row.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const quick = args.includes('--quick');
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? new Set((args[onlyIndex + 1] ?? '').split(',').filter((name) => name !== '')) : undefined;
const check = args.includes('--check');
const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

const suitesDir = join(dirname(fileURLToPath(import.meta.url)), 'suites');
const suites: BenchSuite[] = [];
for (const file of (existsSync(suitesDir) ? readdirSync(suitesDir) : []).filter((f) => f.endsWith('.js')).sort()) {
  const mod = (await import(pathToFileURL(join(suitesDir, file)).href)) as { default: BenchSuite };
  if (!only || only.has(mod.default.name)) suites.push(mod.default);
}
const unknown = only ? [...only].filter((name) => !suites.some((suite) => suite.name === name)) : [];
if (only && (only.size === 0 || unknown.length > 0)) {
  log(`bench: no suite named ${unknown.join(', ') || '(none given)'}`);
  process.exit(2);
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

if (check) {
  // After the table on stdout; beside JSON on stderr, so the JSON stays one document.
  const say = json ? log : (line: string): void => void process.stdout.write(`${line}\n`);
  const short = rows.filter((r) => r.ok === false);
  if (short.length === 0) say(`bench --check: all ${rows.filter((r) => r.ok !== null).length} rows with a target met`);
  else {
    say(`bench --check: ${short.length} row(s) short of target:`);
    for (const r of short) say(`  ${r.name}: ${fmt(r.value)} ${r.unit}, target ${r.target}`);
    process.exitCode = 1;
  }
}
