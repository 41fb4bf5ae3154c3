// Killed at random moments: an install/uninstall, a route and a ledger append are SIGKILLed after a seeded
// random delay (the seed and every delay are logged, so a failure replays). The next command must repair the
// root or find it whole: verify and ledger verify pass, and the gates pass at the end.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  archive,
  assertGatesPass,
  assertRootWhole,
  cleanupBuild,
  CPLANE,
  copyRoot,
  run,
  seeded,
  Tally,
} from './harness.js';
import { receiptPath } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

after(cleanupBuild);
const tally = new Tally();
after(() => {
  process.stdout.write(`# killed processes: ${tally.summary()}\n`);
});

/** Start `cplane args`, SIGKILL it after `delayMs` unless it finished first; resolves with how it ended. */
function killAfter(args: readonly string[], delayMs: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CPLANE, ...args], { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(signal ? `killed (${signal})` : `exited ${code}`);
    });
  });
}

test('install, uninstall, route and ledger append killed at random moments: the next command repairs, the root verifies', async (t) => {
  const seed = Number(process.env.CP_FAULT_SEED ?? Date.now() % 2 ** 31);
  t.diagnostic(`seed ${seed} (replay with CP_FAULT_SEED=${seed})`);
  const random = seeded(seed);
  const dir = mkdtempSync(join(tmpdir(), 'cp-faults-kill-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = copyRoot(join(dir, 'root'));
  const installed = (): boolean => existsSync(receiptPath(root, 'PKG-PROVIDER-GEMINI-001'));
  const rounds = 3;
  for (let round = 0; round < rounds; round += 1) {
    const commands: Array<[string, string[]]> = [
      installed()
        ? ['uninstall', ['uninstall', 'PKG-PROVIDER-GEMINI-001', '--root', root]]
        : ['install', ['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', root, '--dev']],
      ['route', ['route', '--root', root, '--prompt', `killed ${round}`, '--dev']],
      [
        'ledger append',
        [
          'ledger',
          'append',
          '--root',
          root,
          '--event-type',
          'KILL_TEST',
          '--submission-id',
          `K${round}`,
          '--decision',
          'OK',
          '--reason',
          'r',
        ],
      ],
    ];
    for (const [name, args] of commands) {
      const delayMs = Math.floor(50 + random() * 1200);
      const ended = await killAfter(args, delayMs);
      t.diagnostic(`round ${round}: ${name} after ${delayMs} ms -> ${ended}`);
      // The next command opens the root and repairs an interrupted commit: the root verifies whole.
      tally.record(
        `killed ${name} (round ${round}, ${delayMs} ms), then verify`,
        assertRootWhole(root, `after ${name} killed at ${delayMs} ms (seed ${seed})`),
      );
    }
  }
  // Whatever was interrupted, the package is now wholly installed or wholly absent, and installing works.
  if (!installed())
    assert.equal(run(['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', root, '--dev']).status, 0);
  assertGatesPass(root, `after ${rounds * 3} kills (seed ${seed})`);
});
