import { test } from 'node:test';
import assert from 'node:assert/strict';
import canonicalizeImport from 'canonicalize';
import { canonicalJson, sha256Digest, SHA256_DIGEST_PATTERN } from '../../kernel/canonical.js';

// An independent RFC 8785 implementation serves as the oracle for the kernel's one-pass serialiser.
const oracle = canonicalizeImport as unknown as (value: unknown) => string;

function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

const STRINGS = [
  '',
  'a',
  'B',
  'é',
  '\u00e9',
  'e\u0301',
  '😀',
  '\ud83d',
  '\u2028',
  '"\\',
  '\u0000\t\n',
  'Z',
  'aa',
  '__proto__',
  '10',
  '2',
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  1e21,
  1e-7,
  // biome-ignore lint/correctness/noPrecisionLoss: RFC 8785's own example of a literal that rounds
  333333333.33333329,
  5e-324,
  1.7976931348623157e308,
  2 ** 53,
  -123.456e-10,
  4.5,
];

function randomValue(rand: () => number, depth: number): unknown {
  const kind = Math.floor(rand() * (depth > 3 ? 4 : 6));
  if (kind === 0) return STRINGS[Math.floor(rand() * STRINGS.length)];
  if (kind === 1) return NUMBERS[Math.floor(rand() * NUMBERS.length)];
  if (kind === 2) return [true, false, null][Math.floor(rand() * 3)];
  if (kind === 3) return Math.floor(rand() * 1e6) / (rand() < 0.5 ? 1 : 7);
  if (kind === 4) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 6); i > 0; i -= 1) {
    // defineProperty, so "__proto__" becomes an own key (as JSON.parse makes it) rather than setting the prototype.
    Object.defineProperty(out, STRINGS[Math.floor(rand() * STRINGS.length)] as string, {
      value: randomValue(rand, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

test('canonicalJson matches an independent RFC 8785 implementation on random values', () => {
  const rand = seeded(42);
  for (let i = 0; i < 3000; i += 1) {
    const value = randomValue(rand, 0);
    assert.equal(canonicalJson(value), oracle(value), JSON.stringify(value));
  }
});

/** The same value rebuilt with every object's keys inserted in sorted order: the JSON.stringify fast path's input. */
function sortedInsertion(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedInsertion);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    Object.defineProperty(out, key, {
      value: sortedInsertion((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

test('canonicalJson matches the oracle on values built with sorted keys (the stringify fast path)', () => {
  const rand = seeded(7);
  for (let i = 0; i < 3000; i += 1) {
    const value = sortedInsertion(randomValue(rand, 0));
    assert.equal(canonicalJson(value), oracle(value), JSON.stringify(value));
  }
  // Integer-like keys enumerate numerically whatever the insertion order, so "10" before "9" must still come out sorted.
  assert.equal(
    canonicalJson({ '10': 1, '9': 2, a: { c: 1, d: [{ x: 1, y: 2 }] } }),
    '{"10":1,"9":2,"a":{"c":1,"d":[{"x":1,"y":2}]}}',
  );
});

test('canonicalJson matches the oracle on records of a few shapes built unsorted, one after another', () => {
  // A writer's records repeat a handful of key lists: each list's sorted order is reused until another comes.
  const rand = seeded(11);
  const shapes = [
    ['session_id', 'agent_id', 'work_order_id', 'prompt', 'response', 'input_tokens'],
    ['session_id', 'agent_id', 'work_order_id', 'prompt', 'response', 'output_tokens'],
    ['z', 'y', '__proto__', 'x'],
    ['b', 'a', '10', '9'],
    ['b', 'a'],
  ];
  for (let i = 0; i < 2000; i += 1) {
    const shape = shapes[Math.floor(rand() * shapes.length)] as string[];
    const value: Record<string, unknown> = {};
    for (const key of shape)
      Object.defineProperty(value, key, {
        value: rand() < 0.3 ? { b: i, a: [i, { d: 1, c: 'x' }] } : randomValue(rand, 2),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    assert.equal(canonicalJson(value), oracle(value), JSON.stringify(value));
  }
});

test('sorted-key values that JSON.stringify would quietly change are still refused', () => {
  const cases: [unknown, RegExp][] = [
    [{ a: 1, b: undefined }, /undefined at \/b/],
    [{ a: [1, Number.NaN] }, /non-finite number NaN at \/a\/1/],
    [{ a: { toJSON: () => 'x' } }, /function at \/a\/toJSON/],
    [{ a: new Date(0) }, /non-plain object at \/a/],
    // biome-ignore lint/suspicious/noSparseArray: a hole is the input under test
    [{ a: [1, , 2] }, /undefined at \/a\/1/],
  ];
  for (const [value, message] of cases)
    assert.throws(() => canonicalJson(value), { code: 'ERR_CANONICAL_JSON', message });
});

test('canonicalJson: RFC 8785 number and ordering examples', () => {
  assert.equal(
    // biome-ignore lint/correctness/noPrecisionLoss: RFC 8785's own example of a literal that rounds
    canonicalJson({ b: 1, a: [1e21, 1e-7, -0, 333333333.33333329, 0.000001] }),
    '{"a":[1e+21,1e-7,0,333333333.3333333,0.000001],"b":1}',
  );
  // Keys sort by UTF-16 code units: U+20AC (€) sorts before U+1F600 (😀, a surrogate pair starting 0xD83D) ... and "\r" before "1".
  assert.equal(canonicalJson({ '😀': 1, '€': 2, '1': 3, '\r': 4 }), '{"\\r":4,"1":3,"€":2,"😀":1}');
  assert.equal(canonicalJson('\u2028'), '"\u2028"');
});

test('canonicalJson refuses what JSON cannot represent, naming where', () => {
  const cases: [unknown, RegExp][] = [
    [{ a: [1, Number.NaN] }, /non-finite number NaN at \/a\/1/],
    [{ 'x/y': { 'm~n': Infinity } }, /at \/x~1y\/m~0n/],
    [{ when: new Date(0) }, /non-plain object at \/when/],
    [{ u: undefined }, /undefined at \/u is not JSON/],
    [[1n], /bigint at \/0/],
    [() => 1, /function at \/ is not JSON/],
  ];
  for (const [value, message] of cases)
    assert.throws(() => canonicalJson(value), { code: 'ERR_CANONICAL_JSON', message });
  assert.equal(canonicalJson(Object.create(null) as object), '{}');
});

test('sha256Digest is the sha256:<hex> form', () => {
  assert.equal(sha256Digest('abc'), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.match(sha256Digest(new Uint8Array([1, 2])), SHA256_DIGEST_PATTERN);
});
