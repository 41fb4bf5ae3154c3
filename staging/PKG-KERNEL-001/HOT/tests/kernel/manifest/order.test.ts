import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installOrder, type Orderable } from '../../../kernel/manifest/index.js';

const pkg = (package_id: string, layer: 0 | 1 | 2 | 3, deps: string[] = []): Orderable => ({
  package_id,
  layer,
  dependencies: deps.map((id) => ({ package_id: id, version: '*' })),
});
const ids = (list: Orderable[]): string[] => list.map((m) => m.package_id);

test('layer first, dependencies before dependents within a layer, ties by id', () => {
  const input = [
    pkg('PKG-SCHEMAS-001', 1, ['PKG-KERNEL-001']),
    pkg('PKG-KERNEL-001', 0, ['PKG-RUNTIME-001', 'PKG-GENESIS-001']),
    pkg('PKG-RUNTIME-001', 0),
    pkg('PKG-GENESIS-001', 0),
    pkg('PKG-ZED-001', 1),
    pkg('PKG-A-001', 1, ['PKG-ZED-001']),
  ];
  assert.deepEqual(ids(installOrder(input)), [
    'PKG-GENESIS-001',
    'PKG-RUNTIME-001',
    'PKG-KERNEL-001',
    'PKG-SCHEMAS-001',
    'PKG-ZED-001',
    'PKG-A-001',
  ]);
  assert.deepEqual(ids(installOrder([...input].reverse())), ids(installOrder(input)));
});

test('dependencies outside the set (already installed) do not block ordering', () => {
  assert.deepEqual(ids(installOrder([pkg('PKG-B-001', 2, ['PKG-KERNEL-001']), pkg('PKG-A-001', 2, ['PKG-B-001'])])), [
    'PKG-B-001',
    'PKG-A-001',
  ]);
});

test('a cycle is refused naming the cycle', () => {
  const input = [
    pkg('PKG-A-001', 1, ['PKG-B-001']),
    pkg('PKG-B-001', 1, ['PKG-C-001']),
    pkg('PKG-C-001', 1, ['PKG-A-001']),
    pkg('PKG-D-001', 1),
  ];
  assert.throws(
    () => installOrder(input),
    (e: { code: string; message: string; details: { cycle: string[] } }) => {
      assert.equal(e.code, 'ERR_PACKAGE_CYCLE');
      assert.deepEqual(e.details.cycle, ['PKG-A-001', 'PKG-B-001', 'PKG-C-001', 'PKG-A-001']);
      assert.match(e.message, /PKG-A-001 -> PKG-B-001 -> PKG-C-001 -> PKG-A-001/);
      return true;
    },
  );
});

test('a dependency on a higher layer and a duplicate id are refused', () => {
  assert.throws(() => installOrder([pkg('PKG-A-001', 0, ['PKG-B-001']), pkg('PKG-B-001', 1)]), {
    code: 'ERR_PACKAGE_LAYER',
  });
  assert.throws(() => installOrder([pkg('PKG-A-001', 0), pkg('PKG-A-001', 0)]), { code: 'ERR_PACKAGE_DUPLICATE' });
});
