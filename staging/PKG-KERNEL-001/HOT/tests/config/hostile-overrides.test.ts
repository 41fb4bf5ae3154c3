// Hand-edited override files with prototype keys. JSON.parse keeps "__proto__" as an own key, but assigning that
// key while merging sets the merged object's prototype instead: its content then reaches every reader (the
// budgeter, Ajv) while `config show` (JSON.stringify) does not print it. Such a file is refused, and the merge
// itself never sets a prototype.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergeConfig, setAt } from '../../kernel/config/merge.js';
import { checkOverrides, readOverrides } from '../../kernel/config/overrides.js';

const HIDDEN = '{"limits":{"session":{"__proto__":{"by_id":{"S1":{"max_tokens":1000000000000}}}}}}';
const defaults = { limits: { session: { default: { max_tokens: 100 } } } };

test('merge: an own "__proto__" key in an override stays data, never the prototype of the merged config', () => {
  const merged = mergeConfig(defaults, JSON.parse(HIDDEN)) as { limits: { session: Record<string, unknown> } };
  const session = merged.limits.session;
  assert.equal(Object.getPrototypeOf(session), Object.prototype, 'the override replaced a prototype');
  assert.equal(session.by_id, undefined, 'a value no `config show` prints reaches the readers');
  assert.ok(Object.hasOwn(session, '__proto__'));
  // A new subtree (no default under it) goes through the same path.
  const fresh = mergeConfig({}, JSON.parse('{"a":{"__proto__":{"polluted":1}}}')) as { a: Record<string, unknown> };
  assert.equal(Object.getPrototypeOf(fresh.a), Object.prototype);
  assert.equal(fresh.a.polluted, undefined);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('setAt never walks into Object.prototype, whatever path it is given', (t) => {
  t.after(() => delete (Object.prototype as Record<string, unknown>).polluted);
  const out = setAt({}, ['a', '__proto__', 'polluted'], 1) as Record<string, Record<string, unknown>>;
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was written');
  assert.equal(Object.getPrototypeOf(out.a), Object.prototype);
});

test('an override file with a __proto__, constructor or prototype key anywhere is ERR_CONFIG_OVERRIDES_INVALID naming where', (t) => {
  for (const [body, where] of [
    [HIDDEN, 'budget.limits.session.__proto__'],
    ['{"__proto__":{"mode":"off"}}', 'budget.__proto__'],
    ['{"pricing":{"m":{"constructor":{"x":1}}}}', 'budget.pricing.m.constructor'],
    ['{"a":[{"prototype":1}]}', 'budget.a.0.prototype'],
  ] as const) {
    const file = JSON.parse(`{"schema_version":"1","overrides":{"budget":${body}}}`);
    assert.throws(
      () => checkOverrides(file),
      (e: { code?: string; message: string; hint?: string; details?: { key?: string } }) => {
        assert.equal(e.code, 'ERR_CONFIG_OVERRIDES_INVALID', e.message);
        assert.ok(e.message.includes(where), `${e.message} should name ${where}`);
        assert.equal(e.details?.key, where);
        assert.ok((e.hint ?? '').length > 0);
        return true;
      },
    );
  }
  // Through the reader of a root, as every command reads it.
  const root = mkdtempSync(join(tmpdir(), 'cp-proto-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'HOT', 'registries'), { recursive: true });
  writeFileSync(
    join(root, 'HOT', 'registries', 'operator-config.json'),
    `{"schema_version":"1","overrides":{"budget":${HIDDEN}}}`,
  );
  assert.throws(() => readOverrides(root), { code: 'ERR_CONFIG_OVERRIDES_INVALID' });
});
