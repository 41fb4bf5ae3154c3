// One catalogue of codes: fragments are checked when declared, discovered from HOT/<area>/codes.js, and give
// CpError its default hint and the CLI its exit code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../cli/main.js';
import { codeEntry, defineCodes, registeredCodes, warning, warningText } from '../../kernel/catalogue/define.js';
import { exitCodeOf, fragmentPaths, loadCatalogue, lookUpCode } from '../../kernel/catalogue/load.js';
import { CODES as KERNEL_CODES } from '../../kernel/codes.js';
import { CpError, toCpError } from '../../kernel/errors.js';

function tempDir(t: { after(fn: () => void): void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a code is catalogued once: a different entry under the same code is refused, the same one is a no-op', () => {
  defineCodes({ ERR_TEST_CATALOGUE_ONCE: { kind: 'error', meaning: 'a test code', hint: 'none' } });
  defineCodes({ ERR_TEST_CATALOGUE_ONCE: { kind: 'error', meaning: 'a test code', hint: 'none' } });
  assert.throws(
    () => defineCodes({ ERR_TEST_CATALOGUE_ONCE: { kind: 'error', meaning: 'another meaning', hint: 'none' } }),
    /ERR_TEST_CATALOGUE_ONCE is catalogued twice/,
  );
  assert.throws(
    () => defineCodes({ ERR_USAGE: { kind: 'error', meaning: 'a second usage error' } }),
    /ERR_USAGE is catalogued twice/,
  );
  assert.equal(codeEntry('ERR_TEST_CATALOGUE_ONCE')?.meaning, 'a test code');
});

test('an error code is ERR_…, and nothing else is: a misnamed code is refused by the type and at run time', () => {
  const mixed = { TEST_OK: { kind: 'finding', meaning: 'x' }, TEST_NO_ERR: { kind: 'error', meaning: 'x' } } as const;
  // @ts-expect-error an error code must start with ERR_
  const bare = () => defineCodes(mixed);
  assert.throws(bare, /not a well-formed error/);
  assert.equal(codeEntry('TEST_OK'), undefined, 'nothing of a refused fragment is registered');
  // @ts-expect-error only an error code starts with ERR_
  const prefixed = () => defineCodes({ ERR_TEST_WARNING: { kind: 'warning', meaning: 'x' } });
  assert.throws(prefixed, /not a well-formed warning/);
  assert.throws(() => defineCodes({ 'ERR_bad code': { kind: 'error', meaning: 'x' } }), /not a well-formed error/);
  assert.throws(() => defineCodes({ TEST__GAP: { kind: 'finding', meaning: 'x' } }), /not a well-formed finding/);
  defineCodes({ TEST_A_FINDING: { kind: 'finding', meaning: 'x' } });
  assert.equal(codeEntry('TEST_A_FINDING')?.kind, 'finding');
});

test('CpError takes only catalogued codes and defaults its hint from the catalogue', () => {
  // @ts-expect-error a code that is not catalogued does not compile
  assert.equal(new CpError('ERR_NO_SUCH_CODE_ANYWHERE', 'x').hint, '');
  const catalogued = KERNEL_CODES.ERR_LEDGER_NOT_FOUND.hint;
  assert.ok(catalogued);
  assert.equal(new CpError('ERR_LEDGER_NOT_FOUND', 'missing').hint, catalogued);
  assert.equal(new CpError('ERR_LEDGER_NOT_FOUND', 'missing', { hint: 'mine' }).hint, 'mine');
  assert.equal(new CpError('ERR_LEDGER_NOT_FOUND', 'missing', { hint: '' }).hint, '', 'an explicit empty hint stays');
  assert.equal(toCpError(new TypeError('bug')).code, 'ERR_INTERNAL');
  assert.ok([...registeredCodes().keys()].includes('ERR_INTERNAL'), 'the kernel fragment is loaded with CpError');
});

test('exit codes come from the entry, else from its kind', () => {
  assert.equal(exitCodeOf(codeEntry('ERR_USAGE')), 2);
  assert.equal(exitCodeOf(codeEntry('ERR_INTERNAL')), 70);
  assert.equal(exitCodeOf(codeEntry('ERR_LEDGER_NOT_FOUND')), 3);
  assert.equal(exitCodeOf(undefined), 3, 'an uncatalogued code from another kernel copy is a refusal');
  assert.equal(exitCodeOf({ kind: 'finding', meaning: 'x' }), 1);
  assert.equal(exitCodeOf({ kind: 'warning', meaning: 'x' }), 0);
});

test('warnings are {code, message} objects that read as `CODE: message`', () => {
  const w = warning('LEDGER_CLOSE_FAILED', 'database is locked');
  assert.deepEqual(w, { code: 'LEDGER_CLOSE_FAILED', message: 'database is locked' });
  assert.equal(warningText(w), 'LEDGER_CLOSE_FAILED: database is locked');
  // @ts-expect-error an error code is not a warning
  warning('ERR_USAGE', 'x');
});

test('fragments are discovered from HOT/<area>/codes.js; a refused module is skipped, a broken one is not hidden', async (t) => {
  const hot = join(tempDir(t, 'cp-catalogue-'), 'HOT');
  for (const area of ['zeta', 'alpha', 'nocodes', 'refused']) mkdirSync(join(hot, area), { recursive: true });
  writeFileSync(join(hot, 'file.js'), '');
  writeFileSync(
    join(hot, 'zeta', 'codes.js'),
    "export const CODES = { TEST_ZETA_FINDING: { kind: 'finding', meaning: 'z' } };\n",
  );
  writeFileSync(
    join(hot, 'alpha', 'codes.js'),
    "export const CODES = { ERR_TEST_ALPHA: { kind: 'error', meaning: 'a', hint: 'do a' } };\n",
  );
  writeFileSync(join(hot, 'nocodes', 'other.js'), 'export {};\n');
  // What the module loader throws for a tampered file: a coded error, not a bug.
  writeFileSync(
    join(hot, 'refused', 'codes.js'),
    "const e = new Error('tampered'); e.code = 'ERR_MODULE_TAMPERED'; e.hint = 'reinstall'; throw e;\n",
  );
  assert.deepEqual(
    fragmentPaths(hot).map((f) => f.area),
    ['alpha', 'refused', 'zeta'],
  );
  const loaded = await loadCatalogue(hot);
  assert.deepEqual(
    loaded.map((f) => [f.area, Object.keys(f.codes)]),
    [
      ['alpha', ['ERR_TEST_ALPHA']],
      ['zeta', ['TEST_ZETA_FINDING']],
    ],
  );
  assert.deepEqual(fragmentPaths(join(hot, 'absent')), []);
  const fresh = join(tempDir(t, 'cp-catalogue-bug-'), 'HOT');
  mkdirSync(join(fresh, 'beta'), { recursive: true });
  writeFileSync(join(fresh, 'beta', 'codes.js'), "throw new TypeError('a bug in a fragment');\n");
  await assert.rejects(loadCatalogue(fresh), /a bug in a fragment/);
});

test('the CLI prints the catalogue hint for a hintless refusal and exits with the catalogued exit code', async (t) => {
  const dir = tempDir(t, 'cp-catalogue-cli-');
  const errors = new URL('../../kernel/errors.js', import.meta.url).href;
  const command = new URL('../../cli/command.js', import.meta.url).href;
  writeFileSync(
    join(dir, 'refuse.js'),
    `import { CpError, toCpError } from ${JSON.stringify(errors)};
import { defineCommand } from ${JSON.stringify(command)};
export default defineCommand({
  name: 'refuse',
  describe: 'test',
  positionals: { how: { type: 'string', demandOption: true } },
  handler(args) {
    if (args.how === 'bare') throw new CpError('ERR_LEDGER_NOT_FOUND', 'no ledger here', { hint: '' });
    if (args.how === 'internal') throw toCpError(new TypeError('a bug'));
    if (args.how === 'stranger') {
      const e = new Error('from another kernel copy'); e.code = 'ERR_SOMETHING_NEW'; e.hint = ''; throw e;
    }
    return 0;
  },
});
`,
  );
  const err: string[] = [];
  const out: string[] = [];
  const io = { stdout: out.push.bind(out), stderr: err.push.bind(err), extraCommandDirs: [dir] };
  assert.equal(await runCli({ argv: ['refuse', 'bare'], ...io }), 3);
  assert.match(err.join('\n'), /ERR_LEDGER_NOT_FOUND: no ledger here\n {2}hint: \S/);
  assert.ok(err.join('\n').includes(`hint: ${KERNEL_CODES.ERR_LEDGER_NOT_FOUND.hint}`));
  assert.equal(await runCli({ argv: ['refuse', 'bare', '--json'], ...io }), 3);
  assert.equal(JSON.parse(out.join('')).error.hint, KERNEL_CODES.ERR_LEDGER_NOT_FOUND.hint);
  err.length = 0;
  assert.equal(await runCli({ argv: ['refuse', 'internal'], ...io }), 70, 'a bug exits 70, as docs/codes.md says');
  assert.match(err.join('\n'), /ERR_INTERNAL: a bug/);
  err.length = 0;
  assert.equal(await runCli({ argv: ['refuse', 'stranger'], ...io }), 3);
  assert.match(err.join('\n'), /ERR_SOMETHING_NEW: from another kernel copy$/);
  assert.equal((await lookUpCode(join(dir, 'HOT'), 'ERR_SOMETHING_NEW')) ?? null, null);
});
