// The console's modules as the package ships them join into the one script a report inlines; what the joiner cannot
// join faithfully (a missing or cyclic module, a name two modules declare, another form of import) is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleModules } from '../../gateway/console/bundle.js';

const CONSOLE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'console');

test('the shipped modules join: every one reached once, dependencies first, no import or export left', () => {
  const names = readdirSync(CONSOLE).filter((n) => n.endsWith('.js'));
  assert.ok(names.length > 2, 'console.js is split into modules');
  const read = (name: string) => (names.includes(name) ? readFileSync(join(CONSOLE, name), 'utf8') : undefined);
  const bundled = bundleModules('console.js', read);
  assert.ok(bundled.ok, bundled.ok ? '' : bundled.problem);
  const order = [...bundled.script.matchAll(/^\/\/ (console[\w-]*\.js)$/gm)].map((m) => m[1]);
  assert.deepEqual([...order].sort(), [...names].sort(), 'every shipped module is reached from console.js');
  assert.equal(order.at(-1), 'console.js', 'the entry runs last');
  assert.ok(order.indexOf('console-dom.js') < order.indexOf('console-sessions.js'));
  assert.doesNotMatch(bundled.script, /^\s*(import|export)\b/m);
  // One script: it parses as a function body would (module syntax is gone), strict.
  assert.doesNotThrow(() => new Function(`'use strict';\n${bundled.script.replace(/\broute\(\);\s*$/, '')}`));
  for (const name of names)
    assert.ok((read(name)?.split('\n').length ?? 0) <= 300, `${name} is a module of one job, not a second monolith`);
});

test('what cannot be joined faithfully is refused, naming the module', () => {
  const from = (files: Record<string, string>) => (name: string) => files[name];
  const refused = (files: Record<string, string>, pattern: RegExp) => {
    const result = bundleModules('console.js', from(files));
    assert.equal(result.ok, false);
    assert.match(result.ok ? '' : result.problem, pattern);
  };
  refused({ 'console.js': "import { a } from './a.js';\na();" }, /a\.js, imported by console\.js, is missing/);
  refused(
    {
      'console.js': "import { a } from './a.js';",
      'a.js': "import { b } from './b.js';\nexport function a() {}",
      'b.js': "import { a } from './a.js';\nexport function b() {}",
    },
    /cycle/,
  );
  refused(
    { 'console.js': "import { a } from './a.js';\nfunction a() {}", 'a.js': 'export function a() {}' },
    /a is declared by both a\.js and console\.js/,
  );
  refused({ 'console.js': "import * as all from './a.js';", 'a.js': '' }, /cannot join/);
  refused({ 'console.js': 'export default 1;' }, /cannot join/);
  const joined = bundleModules(
    'console.js',
    from({ 'console.js': "import { a } from './a.js';\na();", 'a.js': 'export const a = () => 1;' }),
  );
  assert.deepEqual(joined, { ok: true, script: '// a.js\nconst a = () => 1;\n// console.js\na();' });
});
