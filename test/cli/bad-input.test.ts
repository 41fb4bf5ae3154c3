// Bad input from the command line gets a coded error (exit 3) with a hint, and writes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

test('commands on a path that is not a root, or with a file that is not what they need, refuse with a code and write nothing', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const junk = join(dir, 'junk.tar.gz');
  writeFileSync(junk, 'this is not an archive');
  const nowhere = join(dir, 'nowhere');
  const cases: Array<[string[], string]> = [
    [['bootstrap', junk, '--root', nowhere], 'ERR_ARCHIVE_CORRUPT'],
    [['route', '--root', nowhere, '--prompt', 'x', '--dev'], 'ERR_ROOT_NOT_A_ROOT'],
    [['smoke', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['status', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['gate-check', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['list', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['ledger', 'verify', '--ledger', junk], 'ERR_LEDGER_NOT_A_LEDGER'],
    [['prompt', 'compile', '--spec', junk], 'ERR_PROMPT_SPEC_INVALID'],
  ];
  for (const [args, code] of cases) {
    const run = spawnSync(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...args, '--json'], { cwd: dir, encoding: 'utf8' });
    assert.equal(run.status, 3, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
    const error = (JSON.parse(run.stdout) as { error: { code: string; hint: string } }).error;
    assert.equal(error.code, code, args.join(' '));
    assert.ok(error.hint.length > 0, `${args.join(' ')} has a hint`);
  }
  assert.equal(existsSync(nowhere), false, 'no command created the root it was pointed at');
});
