// The main job end to end, once, in a temporary root: build → CP_BOOTSTRAP → bootstrap → gates →
// installed regression suite → smoke → RESULTS.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { receiptPath } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

test('the main job bootstraps a clean root, passes every gate, the regression suite and the smoke test, and writes RESULTS.md', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-main-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'root');
  const results = join(dir, 'RESULTS.md');
  const run = spawnSync(
    process.execPath,
    [join(REPO, 'build', 'tsc', 'scripts', 'main', 'run.js'), '--root', root, '--results', results],
    { cwd: REPO, encoding: 'utf8' },
  );
  assert.equal(
    run.status,
    0,
    run.stderr
      .split('\n')
      .filter((l) => l.includes('FAILED'))
      .join('\n') || run.stderr.slice(-3000),
  );
  assert.match(run.stderr, /main: PASS: 7\/7 steps ok/);
  const text = readFileSync(results, 'utf8');
  assert.match(text, /Latest full run of the main job \(`npm run bootstrap`\): \*\*PASS\*\*/);
  for (const gate of [
    'G0 | OWNERSHIP',
    'G1 | INTEGRITY',
    'G2 | DEPENDENCIES',
    'G3 | SCHEMAS',
    'G4 | LEDGER',
    'G5 | SIGNATURES',
    'G6 | EXCHANGES',
    'G7 | SMOKE',
  ]) {
    assert.match(text, new RegExp(`\\| ${gate} \\| PASS \\|`), gate);
  }
  const regression = /(\d+) tests, (\d+) passed, (\d+) failed/.exec(text);
  assert.ok(
    regression && Number(regression[1]) > 100 && regression[1] === regression[2] && regression[3] === '0',
    regression?.[0],
  );
  assert.match(text, /PASSED: SMOKE TEST PASSED/);
  assert.match(text, /head anchor: `\d+:[0-9a-f]{64}`/);
  assert.ok(existsSync(receiptPath(root, 'PKG-GATES-001')), 'the root is where --root said');
});
