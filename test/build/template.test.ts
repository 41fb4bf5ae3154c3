import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classify } from '../../scripts/build/classify.js';
import { readTemplate } from '../../scripts/build/template.js';

test('classification: directories first, then the package rules, then code/JSON fallbacks, else refused', () => {
  const rules = [
    { prefix: 'HOT/router/prompts/', classification: 'doc' as const },
    { suffix: '.sql', classification: 'schema' as const },
  ];
  const cases: Array<[string, string]> = [
    ['HOT/node_modules/x/README.md', 'runtime'],
    ['HOT/tests/kernel/a.test.js', 'test'],
    ['HOT/kernel/README.md', 'doc'],
    ['HOT/kernel/ledger/ledger.js', 'kernel'],
    ['HOT/scripts/cplane.js', 'script'],
    ['HOT/schemas/m.schema.json', 'schema'],
    ['HOT/config/router.json', 'config'],
    ['HOT/registries/routes.json', 'registry'],
    ['HOT/router/prompts/system.txt', 'doc'],
    ['HOT/budgeter/store.sql', 'schema'],
    ['HOT/router/route.js', 'kernel'],
    ['HOT/compiler/examples/spec.json', 'config'],
  ];
  for (const [path, expected] of cases) assert.equal(classify(path, rules, 'PKG-X-001'), expected, path);
  assert.throws(
    () => classify('HOT/router/logo.png', rules, 'PKG-X-001'),
    (e: { code: string; details: { path: string } }) =>
      e.code === 'ERR_BUILD_UNCLASSIFIED' && e.details.path === 'HOT/router/logo.png',
  );
});

test('templates: valid ones parse; assets, unknown fields, bad build sections and bad JSON are refused with pointers', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-template-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const base = {
    package_id: 'PKG-X-001',
    version: '0.1.0',
    schema_version: '1',
    title: 'x',
    description: '',
    layer: 2,
    plane_id: 'hot',
    dependencies: [],
    replaces: [],
  };
  const write = (value: unknown): string => {
    const path = join(dir, `${Math.random().toString(16).slice(2)}.json`);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };
  const ok = readTemplate(write({ ...base, build: { classify: [{ prefix: 'HOT/x/', classification: 'doc' }] } }));
  assert.deepEqual(ok.rules, [{ prefix: 'HOT/x/', classification: 'doc' }]);
  assert.equal(ok.runtimeFromLockfile, false);
  const pointers = (value: unknown): string[] => {
    try {
      readTemplate(write(value));
    } catch (error) {
      assert.equal((error as { code: string }).code, 'ERR_BUILD_TEMPLATE_INVALID');
      return (error as { details: { errors: Array<{ pointer: string }> } }).details.errors.map((e) => e.pointer);
    }
    return [];
  };
  assert.deepEqual(pointers({ ...base, assets: [] }), ['/assets']);
  assert.deepEqual(pointers({ ...base, spec_id: 'S' }), ['/spec_id']);
  assert.deepEqual(pointers({ ...base, layer: 9 }), ['/layer']);
  assert.deepEqual(pointers({ ...base, build: { classify: [{ classification: 'binary', prefix: 'HOT/' }] } }), [
    '/build/classify/0/classification',
  ]);
  assert.deepEqual(pointers({ ...base, build: { sign: true } }), ['/build/sign']);
  assert.throws(() => readTemplate(write('{')), { code: 'ERR_BUILD_TEMPLATE_INVALID' });
  assert.throws(() => readTemplate(join(dir, 'absent.json')), { code: 'ERR_BUILD_TEMPLATE_MISSING' });
});
