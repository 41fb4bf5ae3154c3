// bootstrap_vs_floor: a full bootstrap from CP_BOOTSTRAP (genesis + every package, no tests) against the floor
// for "verify and place these bytes", as the issue defines it: plain `tar xzf` of the same archives, then
// `sha256sum` over every extracted file (`find -exec sha256sum {} +`, one tar and one find per archive).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { unpackBootstrap } from '../../lib/unpack-bootstrap.js';
import { freshBootstrap } from '../fresh-bootstrap.js';
import { defineSuite, medianOf, type BenchRow } from '../row.js';

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr?.toString() ?? ''}`);
}

function timed(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export default defineSuite({
  name: 'bootstrap',
  async run({ quick, tmp, log }) {
    const cpb = await unpackBootstrap(freshBootstrap(tmp), join(tmp, 'cpb'));
    const archives = readdirSync(join(cpb, 'packages'))
      .filter((n) => n.endsWith('.tar.gz'))
      .map((n) => join(cpb, 'packages', n));
    const rounds = quick ? 1 : 3;
    const floors: number[] = [];
    const installs: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const out = join(tmp, `floor-${round}`);
      floors.push(
        timed(() => {
          for (const [i, archive] of archives.entries()) {
            const into = join(out, String(i));
            mkdirSync(into, { recursive: true });
            run('tar', ['xzf', archive, '-C', into]);
            run('find', [into, '-type', 'f', '-exec', 'sha256sum', '{}', '+']);
          }
        }),
      );
      rmSync(out, { recursive: true, force: true });
      const root = join(tmp, `root-${round}`);
      installs.push(
        timed(() => {
          const run = spawnSync(process.execPath, [join(cpb, 'install.js'), '--root', root, '--dev'], {
            encoding: 'utf8',
          });
          if (run.status !== 0) throw new Error(`bootstrap failed: ${run.stderr}`);
        }),
      );
      rmSync(root, { recursive: true, force: true });
    }
    const value = medianOf(installs);
    const baseline = medianOf(floors);
    log(
      `bench bootstrap: ${archives.length} archives, bootstrap ${value.toFixed(0)} ms, tar + sha256sum ${baseline.toFixed(0)} ms`,
    );
    const row: BenchRow = {
      name: 'bootstrap_vs_floor',
      value,
      unit: 'ms',
      baseline,
      ratio: value / baseline,
      target: '<= 3',
      ok: value / baseline <= 3,
    };
    return [row];
  },
});
