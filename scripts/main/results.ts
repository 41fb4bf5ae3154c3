import type { StepResult } from './steps.js';

/** What the main job learned; rendered into RESULTS.md (SPEC §11). */
export interface MainJobReport {
  date: string;
  ok: boolean;
  root: string;
  bootstrap?: { file: string; version: string; digest: string };
  packages?: Array<{ package_id: string; version: string; layer: number; files: number }>;
  gates?: Array<{ id: string; name: string; status: string; message: string }>;
  regression?: { files: number; tests: number; passed: number; failed: number; skipped: number };
  smoke?: { ok: boolean; message: string; exchange_entry_id?: string };
  ledger?: { entries: number; anchor: string };
  ownership?: { files: number; transfers: number; ok?: boolean };
  steps: StepResult[];
}

const table = (head: string[], rows: Array<Array<string | number>>): string[] => [
  `| ${head.join(' | ')} |`,
  `|${head.map(() => '---').join('|')}|`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
];

export function renderResults(r: MainJobReport): string {
  const lines = [
    '# RESULTS',
    '',
    `Latest full run of the main job (\`npm run bootstrap\`): **${r.ok ? 'PASS' : 'FAIL'}** — ${r.date}.`,
    '',
    '## Bootstrap',
    '',
    r.bootstrap
      ? `- CP_BOOTSTRAP \`${r.bootstrap.file}\`, version ${r.bootstrap.version}, digest \`${r.bootstrap.digest}\``
      : '- not built',
    `- root: \`${r.root}\``,
    '',
  ];
  if (r.packages) {
    lines.push(
      `## Packages (${r.packages.length}, in install order)`,
      '',
      ...table(
        ['#', 'package', 'version', 'layer', 'files'],
        r.packages.map((p, i) => [i + 1, p.package_id, p.version, p.layer, p.files]),
      ),
      '',
    );
  }
  if (r.ownership)
    lines.push(
      '## Ownership',
      '',
      `- owned files (registry rows): ${r.ownership.files}`,
      `- ownership transfers: ${r.ownership.transfers}`,
      '',
    );
  if (r.ledger)
    lines.push('## Ledger', '', `- entries: ${r.ledger.entries}`, `- head anchor: \`${r.ledger.anchor}\``, '');
  if (r.gates)
    lines.push(
      '## Gates',
      '',
      ...table(
        ['gate', 'name', 'result', 'message'],
        r.gates.map((g) => [g.id, g.name, g.status, g.message.replace(/\|/g, '\\|')]),
      ),
      '',
    );
  if (r.regression) {
    lines.push(
      '## Regression suite (installed tests, run against the root)',
      '',
      `- ${r.regression.files} test files: ${r.regression.tests} tests, ${r.regression.passed} passed, ${r.regression.failed} failed, ${r.regression.skipped} skipped`,
      '',
    );
  }
  if (r.smoke)
    lines.push(
      '## Smoke exchange',
      '',
      `- ${r.smoke.ok ? 'PASSED' : 'FAILED'}: ${r.smoke.message}${r.smoke.exchange_entry_id ? ` (EXCHANGE ${r.smoke.exchange_entry_id})` : ''}`,
      '',
    );
  lines.push(
    '## Steps and timings',
    '',
    ...table(
      ['step', 'result', 'ms'],
      r.steps.map((s) => [s.name, s.ok ? 'ok' : `FAILED: ${s.detail.split('\n')[0]?.slice(0, 200) ?? ''}`, s.ms]),
    ),
    '',
  );
  return `${lines.join('\n')}\n`;
}
