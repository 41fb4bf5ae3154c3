// gate_check_vs_sha256: every gate (G0–G7) on a bootstrapped root, in process and warmed up, against the
// integrity gate's floor — one SHA-256 pass over every owned file's bytes, read from disk.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freshBootstrap } from '../fresh-bootstrap.js';
import { REPO } from '../../lib/repo.js';
import { defineSuite, medianOf } from '../row.js';

type RunGates = typeof import('../../../gates/PKG-GATES-001/HOT/gates/run.js').runGates;

export default defineSuite({
  name: 'gates',
  async run({ quick, tmp, log }) {
    const root = join(tmp, 'root');
    const boot = spawnSync(
      process.execPath,
      [join(REPO, 'bin', 'cplane.js'), 'bootstrap', freshBootstrap(tmp), '--root', root, '--dev'],
      { encoding: 'utf8' },
    );
    if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
    const { runGates } = (await import(pathToFileURL(join(root, 'HOT', 'gates', 'run.js')).href)) as {
      runGates: RunGates;
    };
    const receipts = (await import(
      pathToFileURL(join(root, 'HOT', 'kernel', 'registry', 'receipt.js')).href
    )) as typeof import('../../../staging/PKG-KERNEL-001/HOT/kernel/registry/receipt.js');
    const files = [...receipts.listReceipts(root).values()].flatMap((r) => r.files.map((f) => join(root, f.path)));
    const floor = (): number => {
      const start = performance.now();
      for (const file of files) createHash('sha256').update(readFileSync(file)).digest('hex');
      return performance.now() - start;
    };
    const gates = async (): Promise<number> => {
      const start = performance.now();
      const run = await runGates(root, {});
      if (run.failed > 0)
        throw new Error(
          `gates failed on a fresh root: ${run.gates
            .filter((g) => g.status === 'FAIL')
            .map((g) => g.id)
            .join(', ')}`,
        );
      return performance.now() - start;
    };
    await gates();
    floor();
    const rounds = quick ? 3 : 7;
    const floors: number[] = [];
    const checks: number[] = [];
    for (let i = 0; i < rounds; i += 1) {
      floors.push(floor());
      checks.push(await gates());
    }
    const value = medianOf(checks);
    const baseline = medianOf(floors);
    log(`gates: ${files.length} owned files; gate_check ${value.toFixed(1)} ms vs sha256 ${baseline.toFixed(1)} ms`);
    return [
      {
        name: 'gate_check_vs_sha256',
        value,
        unit: `ms (G0–G7, ${files.length} owned files)`,
        baseline,
        ratio: value / baseline,
        target: '<= 2x',
        ok: value / baseline <= 2,
      },
    ];
  },
});
