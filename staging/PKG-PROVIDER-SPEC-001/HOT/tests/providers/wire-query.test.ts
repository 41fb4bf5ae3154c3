import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type WireRequest, wirePath, wireQuery } from '../../providers/wire/spec.js';

const request = (query?: Record<string, string>): WireRequest => ({
  surface: 'anthropic.messages',
  body: null,
  headers: {},
  ...(query === undefined ? {} : { query }),
});

test('a wire query is the parameters form-encoded in their order, and nothing when there are none', () => {
  assert.equal(wireQuery(request()), '');
  assert.equal(wireQuery(request({})), '');
  assert.equal(wireQuery(request({ alt: 'sse' })), '?alt=sse');
  assert.equal(
    wireQuery(request({ limit: '2', after_id: 'm a&b=c', before: 'é/?' })),
    '?limit=2&after_id=m+a%26b%3Dc&before=%C3%A9%2F%3F',
  );
  assert.equal(wireQuery(request(Object.create(null) as Record<string, string>)), '');
  // Inherited keys were never parameters (a record is read from its own keys).
  assert.equal(wireQuery(request(Object.create({ inherited: 'x' }) as Record<string, string>)), '');
});

test('a wire path fills its {name} segments, encoded, and names the first one missing; a path without one is as given', () => {
  assert.deepEqual(wirePath('/v1/messages'), { path: '/v1/messages' });
  assert.deepEqual(wirePath('/v1/messages', { model: 'x' }), { path: '/v1/messages' });
  assert.deepEqual(wirePath('/v1beta/models/{model}:generateContent', { model: 'gemini 2/é' }), {
    path: '/v1beta/models/gemini%202%2F%C3%A9:generateContent',
  });
  assert.deepEqual(wirePath('/a/{model}/{deployment}', { deployment: 'd' }), { missing: 'model' });
  assert.deepEqual(wirePath('/a/{model}', { model: '' }), { missing: 'model' });
  assert.deepEqual(wirePath('/a/{model}', Object.create({ model: 'inherited' }) as Record<string, string>), {
    missing: 'model',
  });
});
