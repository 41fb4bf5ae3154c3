import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../cli/main.js';

test('a command module that cannot load is reported as ERR_COMMAND_UNAVAILABLE; every other command still works', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-cli-broken-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'broken.js'), "import '../no-such-package/index.js';\nexport default {};\n");
  const out: string[] = [];
  const err: string[] = [];
  const io = {
    stdout: (s: string) => {
      out.push(s);
    },
    stderr: (s: string) => {
      err.push(s);
    },
    extraCommandDirs: [dir],
  };
  assert.equal(await runCli({ argv: ['broken', '--anything'], ...io }), 3);
  assert.match(err.join(''), /ERR_COMMAND_UNAVAILABLE: command "broken" cannot be loaded: Cannot find module/);
  assert.match(err.join(''), /hint: a package file is missing or damaged/);
  out.length = 0;
  assert.equal(
    await runCli({ argv: ['ledger', 'head', '--ledger', join(dir, 'missing.sqlite')], ...io }),
    3,
    'other commands load and run',
  );
  assert.match(err.join(''), /ERR_LEDGER_NOT_FOUND/);
});
