// The model picks the provider family (each provider entry declares its model patterns); an unknown model keeps
// the client's family, as does a client surface no translation exists for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANTHROPIC } from '#providers/anthropic/provider.js';
import { isCpError } from '#kernel/errors.js';
import { OPENAI, OPENAI_RESPONSES_ONLY, responsesOnlyModels } from '#providers/openai/provider.js';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';
import { modelPattern, reach, servingModel, Targets } from '../../gateway/targets.js';
import type { Family } from '../../gateway/surfaces.js';

const provider = (id: string, models: readonly string[] | undefined): WireProvider => ({
  id,
  surfaces: [],
  ...(models === undefined ? {} : { models }),
  call: () => Promise.reject(new Error('not called')),
  reader: () => {
    throw new Error('not called');
  },
});

const both = new Map<Family, WireProvider>([
  ['anthropic', provider('anthropic', ANTHROPIC.models)],
  ['openai', provider('openai', OPENAI.models)],
]);

test('model patterns: * any run, [0-9] a class, everything else literal', () => {
  assert.ok(modelPattern('claude-*').test('claude-sonnet-4-5'));
  assert.ok(!modelPattern('claude-*').test('xclaude-sonnet'));
  assert.ok(modelPattern('o[0-9]*').test('o3-mini'));
  assert.ok(!modelPattern('o[0-9]*').test('omni'));
  assert.ok(modelPattern('gpt-4.1').test('gpt-4.1'));
  assert.ok(!modelPattern('gpt-4.1').test('gpt-4x1'), 'a dot is literal');
  assert.ok(!modelPattern('a(b').test('ab'), 'a stray bracket or parenthesis is literal');
});

test('the model picks the family; across families the translator is set and the upstream surface is its own', () => {
  const targets = new Targets(both);
  const cases: Array<[string, 'anthropic.messages' | 'openai.chat', Family, string, string | null]> = [
    ['gpt-4.1-mini', 'anthropic.messages', 'anthropic', 'openai', 'openai.chat'],
    ['o3-mini', 'anthropic.messages', 'anthropic', 'openai', 'openai.chat'],
    ['chatgpt-4o-latest', 'anthropic.messages', 'anthropic', 'openai', 'openai.chat'],
    ['claude-sonnet-4-5', 'openai.chat', 'openai', 'anthropic', 'anthropic.messages'],
    ['claude-sonnet-4-5', 'anthropic.messages', 'anthropic', 'anthropic', null],
    ['gpt-4.1-mini', 'openai.chat', 'openai', 'openai', null],
    ['llama3', 'anthropic.messages', 'anthropic', 'anthropic', null],
    ['llama3', 'openai.chat', 'openai', 'openai', null],
  ];
  for (const [model, surface, family, providerId, upstream] of cases) {
    const target = targets.targetFor(model, surface, family);
    assert.ok(!('unavailable' in target), model);
    assert.equal(target.provider.id, providerId, `${model} from ${surface}`);
    assert.equal(target.translator?.upstream ?? null, upstream, `${model} from ${surface}`);
    assert.equal(target.surface, upstream ?? surface);
  }
});

test('the Responses surface: a claude model asked there is translated to Messages; a gpt model stays as it is', () => {
  const target = new Targets(both).targetFor('claude-sonnet-4-5', 'openai.responses', 'openai');
  assert.ok(!('unavailable' in target));
  assert.equal(target.provider.id, 'anthropic');
  assert.equal(target.surface, 'anthropic.messages');
  assert.equal(target.translator?.client, 'openai.responses');
  const own = new Targets(both).targetFor('gpt-4.1-mini', 'openai.responses', 'openai');
  assert.ok(!('unavailable' in own));
  assert.equal(own.provider.id, 'openai');
  assert.equal(own.surface, 'openai.responses');
  assert.equal(own.translator, null);
});

test('only configured providers claim models: a claude model on an OpenAI-only gateway stays with OpenAI (a compatible server may serve it); a family with no provider is unavailable', () => {
  const onlyOpenai = new Targets(new Map([['openai', provider('openai', OPENAI.models)]]));
  const claude = onlyOpenai.targetFor('claude-sonnet-4-5', 'openai.chat', 'openai');
  assert.ok(!('unavailable' in claude));
  assert.equal(claude.provider.id, 'openai');
  assert.equal(claude.translator, null);
  const served = onlyOpenai.targetFor('gpt-4.1-mini', 'anthropic.messages', 'anthropic');
  assert.ok(!('unavailable' in served));
  assert.equal(
    served.provider.id,
    'openai',
    'an Anthropic client is served although no Anthropic upstream is configured',
  );
  assert.deepEqual(onlyOpenai.targetFor('llama3', 'anthropic.messages', 'anthropic'), { unavailable: 'anthropic' });
  const undeclared = new Targets(new Map([['anthropic', provider('anthropic', undefined)]]));
  assert.equal(undeclared.familyOf('claude-sonnet-4-5'), null, 'a provider declaring no models claims none');
});

test('a Responses-only model goes to openai.responses from every surface; a Responses client passes through', () => {
  const openai = { ...provider('openai', OPENAI.models), responsesOnly: OPENAI_RESPONSES_ONLY };
  const targets = new Targets(
    new Map<Family, WireProvider>([
      ['anthropic', both.get('anthropic') as WireProvider],
      ['openai', openai],
    ]),
  );
  const cases: Array<[string, WireSurface, Family, WireSurface | null]> = [
    ['o3-pro', 'anthropic.messages', 'anthropic', 'openai.responses'],
    ['o3-pro', 'openai.chat', 'openai', 'openai.responses'],
    ['gpt-5-codex', 'openai.chat', 'openai', 'openai.responses'],
    ['gpt-5.5-pro-2026-04-23', 'gemini.stream', 'gemini', 'openai.responses'],
    ['o3-pro', 'openai.responses', 'openai', null],
    ['o3', 'openai.chat', 'openai', null],
    ['gpt-5', 'anthropic.messages', 'anthropic', 'openai.chat'],
  ];
  for (const [model, surface, family, upstream] of cases) {
    const target = targets.targetFor(model, surface, family, surface === 'gemini.stream');
    assert.ok(!('unavailable' in target), model);
    assert.equal(target.provider.id, 'openai', `${model} from ${surface}`);
    assert.equal(target.translator?.upstream ?? null, upstream, `${model} from ${surface}`);
    assert.equal(target.surface, upstream ?? surface, `${model} from ${surface}`);
  }
});

test("the operator's responses_only_models replaces the shipped list; a malformed one is refused at construction", () => {
  assert.deepEqual(responsesOnlyModels('openai', undefined), OPENAI_RESPONSES_ONLY);
  assert.deepEqual(responsesOnlyModels('openai', { responses_only_models: ['gpt-4.1-*'] }), ['gpt-4.1-*']);
  const openai = { ...provider('openai', OPENAI.models), responsesOnly: ['gpt-4.1-*'] };
  const target = new Targets(new Map<Family, WireProvider>([['openai', openai]])).targetFor(
    'gpt-4.1-mini',
    'openai.chat',
    'openai',
  );
  assert.ok(!('unavailable' in target));
  assert.equal(target.surface, 'openai.responses');
  const o3pro = new Targets(new Map<Family, WireProvider>([['openai', openai]])).targetFor(
    'o3-pro',
    'openai.chat',
    'openai',
  );
  assert.ok(!('unavailable' in o3pro));
  assert.equal(o3pro.surface, 'openai.chat', 'the shipped list is replaced, not extended');
  for (const bad of [
    { responses_only: [] },
    { responses_only_models: 'o3-pro' },
    { responses_only_models: ['a b'] },
    7,
  ])
    assert.throws(
      () => responsesOnlyModels('openai', bad),
      (e: unknown) => isCpError(e) && e.code === 'ERR_PROVIDER_CONFIG',
    );
});

test("reach: a provider serving the client's surface is called on it; another format through a translation; none: null", () => {
  const openai = { surfaces: ['openai.chat', 'openai.responses', 'openai.models'] as const };
  const anthropic = { surfaces: ['anthropic.messages', 'anthropic.count_tokens'] as const };
  const gemini = { surfaces: ['gemini.generate', 'gemini.stream', 'gemini.count_tokens'] as const };
  const embeddings = { surfaces: ['openai.embeddings'] as const };
  const route = (p: { surfaces: readonly string[] }, client: string, stream: boolean) => {
    const found = reach(p as WireProvider, client as WireSurface, stream);
    return found === null ? null : [found.surface, found.translator?.client ?? null];
  };
  assert.deepEqual(route(openai, 'openai.chat', false), ['openai.chat', null]);
  assert.deepEqual(route(openai, 'openai.responses', true), ['openai.responses', null]);
  assert.deepEqual(route(openai, 'anthropic.messages', true), ['openai.chat', 'anthropic.messages']);
  assert.deepEqual(route(anthropic, 'openai.chat', false), ['anthropic.messages', 'openai.chat']);
  assert.deepEqual(route(gemini, 'anthropic.messages', false), ['gemini.generate', 'anthropic.messages']);
  assert.deepEqual(route(gemini, 'anthropic.messages', true), ['gemini.stream', 'anthropic.messages']);
  assert.deepEqual(route(anthropic, 'gemini.stream', true), ['anthropic.messages', 'gemini.stream']);
  // No translation for the other surfaces (a count, a models list) nor to a provider without a generation surface.
  assert.equal(route(openai, 'anthropic.count_tokens', false), null);
  assert.equal(route(embeddings, 'anthropic.messages', false), null);
});

test('a routed deployment of a Responses-only model is reached on openai.responses from every client surface', () => {
  const openai = {
    surfaces: ['openai.chat', 'openai.responses', 'openai.models'] as WireSurface[],
    responsesOnly: OPENAI_RESPONSES_ONLY,
  };
  const route = (model: string, client: WireSurface, stream: boolean) => {
    const found = reach(servingModel(openai, model) as WireProvider, client, stream);
    return found === null ? null : [found.surface, found.translator?.client ?? null];
  };
  assert.deepEqual(route('o3-pro', 'anthropic.messages', true), ['openai.responses', 'anthropic.messages']);
  assert.deepEqual(route('o3-pro', 'openai.chat', false), ['openai.responses', 'openai.chat']);
  assert.deepEqual(route('o3-pro', 'openai.responses', true), ['openai.responses', null]);
  assert.deepEqual(route('gpt-4.1', 'anthropic.messages', true), ['openai.chat', 'anthropic.messages']);
  assert.deepEqual(route('gpt-4.1', 'openai.chat', false), ['openai.chat', null]);
});
