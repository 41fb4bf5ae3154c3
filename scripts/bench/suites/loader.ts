// entry_verified_startup_vs_plain: `node ROOT/HOT/scripts/cplane.js --help` on a bootstrapped root, where every
// module the CLI loads is checked against the root's packages before it runs, against the same CLI started
// without the loader (main.js imported straight from an -e script): the start-up cost of verified loading.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freshBootstrap } from '../fresh-bootstrap.js';
import { REPO } from '../../lib/repo.js';
import { defineSuite, medianOf, timeEach } from '../row.js';

export default defineSuite({
  name: 'loader',
  async run({ quick, tmp, log }) {
    const root = join(tmp, 'root');
    const boot = spawnSync(
      process.execPath,
      [join(REPO, 'bin', 'cplane.js'), 'bootstrap', freshBootstrap(tmp), '--root', root, '--dev'],
      { encoding: 'utf8' },
    );
    if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
    const main = pathToFileURL(join(root, 'HOT', 'cli', 'main.js')).href;
    const verified = [join(root, 'HOT', 'scripts', 'cplane.js'), '--help'];
    const plain = [
      '--input-type=module',
      '-e',
      `import { runCli } from ${JSON.stringify(main)}; process.exitCode = await runCli({ argv: ['--help'], defaultRoot: ${JSON.stringify(root)} });`,
    ];
    const start = (args: string[]) => (): void => {
      const r = spawnSync(process.execPath, args, { encoding: 'utf8' });
      if (r.status !== 0 || !r.stdout.includes('Exit codes')) throw new Error(`cplane --help failed: ${r.stderr}`);
    };
    start(verified)();
    start(plain)();
    const rounds = quick ? 3 : 7;
    const runs = quick ? 3 : 5;
    const verifiedMs: number[] = [];
    const plainMs: number[] = [];
    for (let i = 0; i < rounds; i += 1) {
      plainMs.push(medianOf(timeEach(runs, start(plain))));
      verifiedMs.push(medianOf(timeEach(runs, start(verified))));
    }
    const value = medianOf(verifiedMs);
    const baseline = medianOf(plainMs);
    log(`loader: cplane --help ${value.toFixed(1)} ms verified vs ${baseline.toFixed(1)} ms plain`);
    return [
      {
        name: 'entry_verified_startup_vs_plain',
        value,
        unit: 'ms (cplane --help, one process start)',
        baseline,
        ratio: value / baseline,
        target: '<= 1.25x',
        ok: value / baseline <= 1.25,
      },
    ];
  },
});
