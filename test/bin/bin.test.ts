import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

const BIN = join(REPO, 'bin', 'cplane.js');

function cplane(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BIN, ...args], { cwd: REPO, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

test('the bin sets the process exit code: 2 for an unknown command or option, with ERR_USAGE', () => {
  const unknown = cplane('nope');
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /^cplane: ERR_USAGE: /m);
  assert.match(unknown.stderr, /hint: /);
  const json = cplane('ledger', 'head', '--nope', '--json');
  assert.equal(json.status, 2);
  assert.equal((JSON.parse(json.stdout) as { error: { code: string } }).error.code, 'ERR_USAGE');
});

test('the bin runs a ledger round trip: append, head, verify exits 0 against the anchor and 1 against a wrong one', () => {
  const root = mkdtempSync(join(tmpdir(), 'cp-bin-'));
  try {
    const append = cplane(
      'ledger',
      'append',
      '--root',
      root,
      '--event-type',
      'TEST',
      '--submission-id',
      'S',
      '--decision',
      'OK',
      '--reason',
      'r',
    );
    assert.equal(append.status, 0, append.stderr);
    assert.match(append.stdout.trim(), /^LED-[a-f0-9]{8}$/);
    const head = cplane('ledger', 'head', '--root', root).stdout.trim();
    assert.match(head, /^1:[0-9a-f]{64}$/);
    assert.equal(cplane('ledger', 'verify', '--root', root, '--anchor', head).status, 0);
    const wrong = cplane('ledger', 'verify', '--root', root, '--anchor', `1:${'0'.repeat(64)}`);
    assert.equal(wrong.status, 1);
    assert.match(wrong.stdout, /anchor_mismatch/);
    assert.equal(cplane('ledger', 'verify', '--help').status, 0);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
