// The code tables of docs/codes.md are generated from the one catalogue, and every code the code can raise is in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { CODES_DOC, type CataloguedCode, mergedCatalogue, withTables } from '../../scripts/docs/catalogue.js';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const abs = join(dir, name);
    if (statSync(abs).isDirectory()) return name === 'tests' || name === 'node_modules' ? [] : sources(abs);
    return name.endsWith('.ts') ? [abs] : [];
  });
}

const page = (): string => readFileSync(join(REPO, CODES_DOC), 'utf8');

test('the docs/codes.md tables are what the catalogue generates (run `npm run docs` after adding a code)', async () => {
  const codes = await mergedCatalogue();
  assert.ok(codes.length > 150, `only ${codes.length} codes: the fragments were not found`);
  const text = page();
  assert.equal(withTables(text, codes), text, 'docs/codes.md drifted from the catalogue: run `npm run docs`');
});

test('a row of docs/codes.md edited, dropped or added by hand is drift; a missing marker is refused', async () => {
  const codes = await mergedCatalogue();
  const text = withTables(page(), codes);
  const edited = text.replace(
    '| `ERR_DISK_FULL` | 3 | the filesystem is full',
    '| `ERR_DISK_FULL` | 3 | the disk is full',
  );
  assert.notEqual(edited, text, 'the row exists');
  assert.equal(withTables(edited, codes), text);
  const dropped = text.replace(/^\| `SMOKE_FAILED` \|.*\n/m, '');
  assert.notEqual(dropped, text);
  assert.equal(withTables(dropped, codes), text);
  const added = text.replace('| `CIRCUIT_OPEN` |', '| `ERR_MADE_UP` | 3 | invented |\n| `CIRCUIT_OPEN` |');
  assert.equal(withTables(added, codes), text);
  assert.throws(() => withTables(text.replace('<!-- codes:warning:end -->', ''), codes), /lacks the markers/);
});

test('every ERR_ code raised by a package, a script, the bootstrap entry or the bin is a catalogued error', async () => {
  const files = [
    ...sources(join(REPO, 'staging')),
    ...sources(join(REPO, 'gates')),
    ...sources(join(REPO, 'scripts')),
    ...sources(join(REPO, 'bootstrap')),
    join(REPO, 'bin', 'cplane.js'),
  ];
  const raised = new Set<string>();
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(/['`](ERR_[A-Z0-9_]*[A-Z0-9])['`:]/g))
      raised.add(match[1] as string);
  }
  const { PROVIDER_ERROR_KINDS, providerErrorCode } =
    await fromDevRoot<typeof import('../../staging/PKG-PROVIDER-SPEC-001/HOT/providers/errors.js')>(
      'HOT/providers/errors.js',
    );
  for (const kind of PROVIDER_ERROR_KINDS) raised.add(providerErrorCode(kind));
  assert.ok(raised.size > 40, `found only ${raised.size} codes: the scan is broken`);
  const byCode = new Map((await mergedCatalogue()).map((c) => [c.code, c]));
  const missing = [...raised].filter((code) => byCode.get(code)?.kind !== 'error').sort();
  assert.deepEqual(missing, [], `not catalogued as errors: ${missing.join(', ')}`);
});

test('every exit code the catalogue gives is one the "Exit codes" table of docs/codes.md explains', async () => {
  const text = page();
  const section = text.slice(text.indexOf('## Exit codes'), text.indexOf('## Error codes'));
  const documented = new Set([...section.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1])));
  assert.deepEqual(
    [...documented].sort((a, b) => a - b),
    [0, 1, 2, 3, 70],
  );
  const codes = await mergedCatalogue();
  const exits = (kind: CataloguedCode['kind']): number[] => [
    ...new Set(codes.filter((c) => c.kind === kind).map((c) => c.exit ?? (kind === 'error' ? 3 : -1))),
  ];
  assert.deepEqual(
    exits('error').sort((a, b) => a - b),
    [2, 3, 70],
  );
  assert.equal(codes.find((c) => c.code === 'ERR_USAGE')?.exit, 2);
  assert.equal(codes.find((c) => c.code === 'ERR_INTERNAL')?.exit, 70);
  for (const kind of ['refusal', 'finding', 'warning'] as const) assert.deepEqual(exits(kind), [-1], kind);
});
