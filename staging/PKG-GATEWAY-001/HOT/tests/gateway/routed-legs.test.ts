// A routed call's legs on their own: an alias's deployments grouped by the surface each is called on, the request
// translated once per surface, and a deployment the request cannot be carried to skipped with the field named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';
import { aliasWays, RoutedLegs } from '../../gateway/routed-legs.js';

const speaks = (...surfaces: WireSurface[]) => ({ surfaces }) as Pick<WireProvider, 'surfaces'>;
const ANTHROPIC = speaks('anthropic.messages', 'anthropic.count_tokens');
const OPENAI = speaks('openai.chat', 'openai.responses');
const EMBEDDINGS = speaks('openai.embeddings');
const call = { model: 'alias', stream: false, defaultMaxTokens: 1024 };

const deployments = [
  ['a1', ANTHROPIC],
  ['o1', OPENAI],
  ['a2', ANTHROPIC],
  ['o2', OPENAI],
  ['e1', EMBEDDINGS],
] as const;

test('deployments grouped by the surface they are called on; the body translated once per surface', () => {
  const ways = aliasWays(deployments, 'anthropic.messages', false);
  assert.deepEqual(
    ways.ways.map((w) => [w.surface, w.translator?.upstream ?? null, w.deployments]),
    [
      ['anthropic.messages', null, ['a1', 'a2']],
      ['openai.chat', 'openai.chat', ['o1', 'o2']],
    ],
  );
  assert.deepEqual(ways.unreachable, ['e1']);
  const own = { model: 'alias', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
  const legs = new RoutedLegs(ways, own, own, call);
  assert.equal(legs.leg('a1')?.body, own, "the client's own body for its own format");
  assert.equal(legs.leg('a1')?.translator, null);
  const chat = legs.leg('o1');
  assert.equal(chat?.surface, 'openai.chat');
  assert.deepEqual(chat?.body, {
    model: 'alias',
    messages: [{ role: 'user', content: 'hi' }],
    max_completion_tokens: 64,
  });
  assert.equal(legs.leg('o2')?.body, chat?.body, 'one translation for both deployments on Chat Completions');
  assert.equal(legs.leg('e1'), null);
  assert.ok(legs.reachable);
  assert.deepEqual(
    legs.skipped.map((s) => [s.deployment, s.upstream_surface, s.field]),
    [['e1', null, null]],
  );
});

test('a field a format cannot express skips its deployments; none left: the refusal names it', () => {
  const thinking = {
    model: 'alias',
    max_tokens: 2048,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'hi' }],
  };
  const mixed = new RoutedLegs(aliasWays(deployments, 'anthropic.messages', false), thinking, thinking, call);
  assert.ok(mixed.reachable, 'the Anthropic deployments still take it');
  assert.equal(mixed.leg('o1'), null);
  assert.deepEqual(
    mixed.skipped.map((s) => [s.deployment, s.upstream_surface, s.field]),
    [
      ['e1', null, null],
      ['o1', 'openai.chat', 'thinking'],
      ['o2', 'openai.chat', 'thinking'],
    ],
  );
  const onlyOpenai = new RoutedLegs(aliasWays([['o1', OPENAI]], 'anthropic.messages', false), thinking, thinking, call);
  assert.equal(onlyOpenai.reachable, false);
  assert.equal(onlyOpenai.refusal()?.refusal.field, 'thinking');
  assert.equal(onlyOpenai.refusal()?.translator.upstream, 'openai.chat');
});
