// The hand-written Prometheus exposition: escaping, cumulative histogram buckets, and labels bounded at the edge.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from '../../gateway/metrics/exposition.js';
import { BoundedLabel, codeLabel, SURFACES, surfaceLabel } from '../../gateway/metrics/labels.js';
import { endpointFor } from '../../gateway/surfaces.js';

test('label values are escaped as the text format requires', () => {
  const registry = new Registry();
  registry.counter('x_total', 'help with a \\ and\na line', ['v']).inc(['a"b\\c\nd'], 2);
  const text = registry.render();
  assert.ok(text.includes('# HELP x_total help with a \\\\ and\\na line\n'), text);
  assert.ok(text.includes('x_total{v="a\\"b\\\\c\\nd"} 2\n'), text);
});

test('histogram buckets are cumulative, +Inf equals the count, the sum is kept', () => {
  const registry = new Registry();
  const h = registry.histogram('d_seconds', 'd', ['s'], [0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 3, Number.NaN]) h.observe(['x'], v);
  const lines = registry.render().split('\n');
  assert.ok(lines.includes('d_seconds_bucket{s="x",le="0.1"} 2'));
  assert.ok(lines.includes('d_seconds_bucket{s="x",le="1"} 3'));
  assert.ok(lines.includes('d_seconds_bucket{s="x",le="+Inf"} 4'));
  assert.ok(lines.includes('d_seconds_sum{s="x"} 3.65'));
  assert.ok(lines.includes('d_seconds_count{s="x"} 4'));
});

test('labels outside the configured set are "other"; a refusal code must have the catalogue shape', () => {
  const models = new BoundedLabel(['claude-sonnet-4-5']);
  assert.equal(models.of('claude-sonnet-4-5'), 'claude-sonnet-4-5');
  assert.equal(models.of('anything-a-client-sends'), 'other');
  assert.equal(models.of(undefined), 'other');
  assert.equal(surfaceLabel('CONTRACT-OF-A-USER'), 'route');
  assert.equal(codeLabel('AUTH_SCOPE'), 'AUTH_SCOPE');
  assert.equal(codeLabel('x"y'), 'other');
});

test('the surface label set is every surface the gateway serves', () => {
  const served = [
    endpointFor('POST', '/v1/messages', true),
    endpointFor('POST', '/v1/messages/count_tokens', true),
    endpointFor('GET', '/v1/models', true),
    endpointFor('POST', '/v1/chat/completions', false),
    endpointFor('POST', '/v1/responses', false),
    endpointFor('GET', '/v1/models', false),
  ].map((e) => e?.surface);
  assert.deepEqual([...served].sort(), [...SURFACES].sort());
});
