// `cplane prices`: LiteLLM and models.dev catalogues (fixtures shaped like the real files: LiteLLM's
// model_prices_and_context_window.json with its sample_spec, models.dev's api.json keyed by provider) read into the
// operator layer of the price table, recorded as CONFIG_CHANGED; a model only the import prices is then charged by
// it; hostile files are refused whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  ftruncateSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '#cli/main.js';
import { Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { createLockFile } from '#kernel/root/lock.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';
import { Budgeter } from '../../budgeter/index.js';
import type { ReserveOutcome } from '../../budgeter/results.js';
import { readPriceFile } from '../../budgeter/prices/table.js';
import { tempDir } from './helpers.js';

const HERE = new URL('.', import.meta.url);
const fixture = (name: string): string => fileURLToPath(new URL(`fixtures/prices/${name}`, HERE));
const SHIPPED_CONFIG = fileURLToPath(new URL('../../config/budget.json', import.meta.url));
const SCHEMA = fileURLToPath(new URL('../../schemas/budget-config.schema.json', import.meta.url));

function makeRoot(t: import('node:test').TestContext, limits: Record<string, unknown> = {}): string {
  const root = tempDir(t, 'cp-prices-');
  const paths = rootPaths(root);
  for (const dir of [paths.config, paths.schemas, paths.registries, paths.ledgerDir])
    mkdirSync(dir, { recursive: true });
  const shipped = JSON.parse(readFileSync(SHIPPED_CONFIG, 'utf8')) as Record<string, unknown>;
  writeFileSync(configPath(root, 'budget.json'), JSON.stringify({ ...shipped, limits }));
  copyFileSync(SCHEMA, join(paths.schemas, 'budget-config.schema.json'));
  createLockFile(root);
  Ledger.open(ledgerPathForRoot(root), { create: true }).close();
  return root;
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    stdout: (s) => {
      out += `${s}\n`;
    },
    stderr: (s) => {
      err += `${s}\n`;
    },
  });
  return { code, out, err };
}

function configChanges(root: string): Array<{ reason: string; metadata: Record<string, unknown> }> {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return ledger.query({ event_type: 'CONFIG_CHANGED' }) as never;
  } finally {
    ledger.close();
  }
}

test('a LiteLLM file: per-token costs become per-million prices; images, unpriced entries and sample_spec are skipped', () => {
  const parsed = readPriceFile(fixture('litellm.json'));
  assert.equal(parsed.format, 'litellm');
  assert.deepEqual([...parsed.models.keys()].sort(), [
    'amazon.nova-lite-v1:0',
    'claude-sonnet-4-5',
    'deepseek/deepseek-chat',
    'gpt-4.1-mini',
    'mistral/mistral-embed',
    'together-ai-up-to-4b',
  ]);
  assert.equal(parsed.skipped, 2); // the dall-e image entry and openrouter/openai/o1 (no token price)
  assert.deepEqual(parsed.models.get('deepseek/deepseek-chat'), {
    price: {
      input_per_mtok: 0.28,
      output_per_mtok: 0.42,
      cache_read_per_mtok: 0.028,
      cache_write_5m_per_mtok: 0,
      cache_write_1h_per_mtok: 0,
    },
    provider: 'deepseek',
    context_window: 131072,
  });
  assert.deepEqual(parsed.models.get('claude-sonnet-4-5')?.price, {
    input_per_mtok: 3,
    output_per_mtok: 15,
    cache_read_per_mtok: 0.3,
    cache_write_5m_per_mtok: 3.75,
    cache_write_1h_per_mtok: 6,
  });
  // An embedding model has no output price; a model without cache prices pays the input price for them.
  assert.deepEqual(parsed.models.get('mistral/mistral-embed')?.price, {
    input_per_mtok: 0.1,
    output_per_mtok: 0,
    cache_read_per_mtok: 0.1,
    cache_write_5m_per_mtok: 0.1,
    cache_write_1h_per_mtok: 0.1,
  });
  const narrowed = readPriceFile(fixture('litellm.json'), { providers: ['deepseek'] });
  assert.deepEqual([...narrowed.models.keys()], ['deepseek/deepseek-chat']);
});

test('a models.dev file: a model two providers price differently is a conflict until --provider picks one', () => {
  const parsed = readPriceFile(fixture('models-dev.json'));
  assert.equal(parsed.format, 'models.dev');
  assert.deepEqual(parsed.conflicts, ['deepseek-chat']);
  assert.deepEqual([...parsed.models.keys()].sort(), ['deepseek-reasoner', 'gemini-2.5-pro']);
  assert.equal(parsed.skipped, 1); // lmstudio's model has no cost
  assert.deepEqual(parsed.models.get('gemini-2.5-pro'), {
    price: {
      input_per_mtok: 1.25,
      output_per_mtok: 10,
      cache_read_per_mtok: 0.31,
      cache_write_5m_per_mtok: 1.25,
      cache_write_1h_per_mtok: 1.25,
    },
    provider: 'google',
    context_window: 1048576,
  });
  const picked = readPriceFile(fixture('models-dev.json'), { providers: ['openrouter', 'deepseek'] });
  assert.deepEqual(picked.conflicts, []);
  assert.equal(picked.models.get('deepseek-chat')?.provider, 'openrouter');
  assert.equal(picked.models.get('deepseek-chat')?.price.output_per_mtok, 0.85);
});

test('prices import: one CONFIG_CHANGED, shipped prices kept and listed, the table names each source, diff then empty', async (t) => {
  const root = makeRoot(t);
  const file = fixture('litellm.json');
  const before = await cli(['prices', 'diff', file, '--root', root, '--json']);
  assert.equal(before.code, 0, before.err + before.out);
  const plan = JSON.parse(before.out) as { added: string[]; kept_shipped: Array<{ model: string }>; unchanged: number };
  assert.equal(existsSync(rootPaths(root).operatorConfig), false, 'diff writes nothing');
  assert.deepEqual(
    plan.kept_shipped.map((c) => c.model),
    ['gpt-4.1-mini'],
  );
  assert.equal(plan.unchanged, 1); // claude-sonnet-4-5: the file agrees with the shipped table
  assert.equal(plan.added.length, 4);

  const imported = await cli(['prices', 'import', file, '--root', root, '--json']);
  assert.equal(imported.code, 0, imported.err);
  const changes = configChanges(root);
  assert.equal(changes.length, 1);
  const change = changes[0];
  assert.ok(change);
  assert.match(change.reason, /^prices import .*litellm\.json \(litellm\): 4 added, 0 changed$/);
  assert.equal((change.metadata.via as Record<string, unknown>).kept_shipped, 1);
  const keys = change.metadata.changed_keys as string[];
  assert.equal(keys.length, 20); // five prices of each of the four models added
  assert.ok(
    keys.some((k) => k.startsWith('budget.pricing') && k.includes('deepseek/deepseek-chat')),
    keys.join(),
  );

  const list = await cli(['prices', 'list', '--root', root, '--json']);
  const rows = JSON.parse(list.out) as Array<{ model: string; source: string; input_per_mtok: number }>;
  const row = (m: string) => rows.find((r) => r.model === m);
  assert.deepEqual(
    [row('deepseek/deepseek-chat')?.source, row('deepseek/deepseek-chat')?.input_per_mtok],
    ['operator', 0.28],
  );
  assert.deepEqual([row('gpt-4.1-mini')?.source, row('gpt-4.1-mini')?.input_per_mtok], ['shipped', 0.4]);

  const again = await cli(['prices', 'import', file, '--root', root, '--json']);
  assert.equal((JSON.parse(again.out) as { change: unknown }).change, null);
  assert.equal(configChanges(root).length, 1, 'an import that moves nothing records nothing');

  const over = await cli(['prices', 'import', file, '--root', root, '--override-shipped']);
  assert.equal(over.code, 0, over.err);
  assert.match(over.out, /~ gpt-4\.1-mini: in 0\.4 .* -> in 0\.45 /);
  const listed = JSON.parse((await cli(['prices', 'list', '--root', root, '--json', '--model', 'gpt-4.1-mini'])).out);
  // --model matches ids containing it (the dated gpt-4.1-mini-2025-04-14 too): the one the file priced is asked for.
  const after = (listed as Array<{ model: string }>).filter((r) => r.model === 'gpt-4.1-mini');
  assert.deepEqual(after, [
    {
      model: 'gpt-4.1-mini',
      source: 'operator over shipped',
      input_per_mtok: 0.45,
      output_per_mtok: 1.8,
      cache_read_per_mtok: 0.1,
      cache_write_5m_per_mtok: 0.45,
      cache_write_1h_per_mtok: 0.45,
    },
  ]);
  assert.equal(configChanges(root).length, 2);
});

function reserveCapped(root: string, id: string): { b: Budgeter; outcome: ReserveOutcome } {
  const b = Budgeter.open({ root });
  const outcome = b.reserve({
    request_id: id,
    session_id: 'capped',
    model: 'deepseek-reasoner',
    estimated_input_tokens: 1000,
    max_output_tokens: 1000,
  });
  return { b, outcome };
}

test('a model only the import prices is charged at the imported price under a cost limit; before it, BUDGET_PRICE_UNKNOWN', async (t) => {
  const root = makeRoot(t, { session: { by_id: { capped: { max_cost: 1 } } } });
  const first = reserveCapped(root, 'R-before');
  first.b.close();
  assert.equal(first.outcome.ok, false);
  assert.equal((first.outcome as { code: string }).code, 'BUDGET_PRICE_UNKNOWN');

  const r = await cli(['prices', 'import', fixture('models-dev.json'), '--root', root, '--provider', 'deepseek']);
  assert.equal(r.code, 0, r.err);
  const { b, outcome } = reserveCapped(root, 'R-after');
  try {
    assert.equal(outcome.ok, true, JSON.stringify(outcome));
    const settled = b.settle({ request_id: 'R-after', usage: { input_tokens: 1_000_000, output_tokens: 0 } });
    assert.equal(settled.reservation.cost, 0.28);
    const s2 = b.reserve({
      request_id: 'R-2',
      session_id: 'capped',
      model: 'deepseek-reasoner',
      estimated_input_tokens: 0,
      max_output_tokens: 100,
    });
    assert.equal(s2.ok, true);
    const settled2 = b.settle({ request_id: 'R-2', usage: { input_tokens: 0, output_tokens: 100 } });
    assert.equal(settled2.reservation.cost, 0.000042);
  } finally {
    b.close();
  }
});

test('hostile price files are refused with a coded error and nothing is imported', async (t) => {
  const root = makeRoot(t);
  const dir = tempDir(t, 'cp-prices-hostile-');
  const base = JSON.parse(readFileSync(fixture('litellm.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  const withEntry = (name: string, patch: Record<string, unknown>): string => {
    const path = join(dir, `${name}.json`);
    writeFileSync(path, JSON.stringify({ ...base, 'x-model': { ...base['deepseek/deepseek-chat'], ...patch } }));
    return path;
  };
  const cases: Array<[string, string, string]> = [
    [withEntry('negative', { input_cost_per_token: -1e-6 }), 'ERR_PRICES_FILE_INVALID', 'input_cost_per_token'],
    [withEntry('string', { output_cost_per_token: '0.000002' }), 'ERR_PRICES_FILE_INVALID', 'output_cost_per_token'],
    [
      withEntry('nan', { cache_read_input_token_cost: 'NaN' }),
      'ERR_PRICES_FILE_INVALID',
      'cache_read_input_token_cost',
    ],
    [withEntry('huge-price', { input_cost_per_token: 5 }), 'ERR_PRICES_FILE_INVALID', 'input_cost_per_token'],
  ];
  const infinite = join(dir, 'infinite.json');
  writeFileSync(
    infinite,
    readFileSync(withEntry('marker', { input_cost_per_token: 123456789 }), 'utf8').replace('123456789', '1e999'),
  );
  cases.push([infinite, 'ERR_PRICES_FILE_INVALID', 'input_cost_per_token']);
  const proto = join(dir, 'proto.json');
  writeFileSync(
    proto,
    '{"__proto__": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}',
  );
  cases.push([proto, 'ERR_PRICES_FILE_INVALID', '']);
  const notJson = join(dir, 'not.json');
  writeFileSync(notJson, '{"gpt-x": {');
  cases.push([notJson, 'ERR_PRICES_FILE_INVALID', '']);
  const array = join(dir, 'array.json');
  writeFileSync(array, '[1, 2]');
  cases.push([array, 'ERR_PRICES_FILE_INVALID', '']);
  const wrongShape = join(dir, 'shape.json');
  writeFileSync(wrongShape, '{"openai": {"id": "openai", "models": [1]}}');
  cases.push([wrongShape, 'ERR_PRICES_FILE_INVALID', '']);
  const huge = join(dir, 'huge.json');
  const fd = openSync(huge, 'w');
  ftruncateSync(fd, 33 * 1024 * 1024);
  closeSync(fd);
  cases.push([huge, 'ERR_INPUT_TOO_LARGE', '']);
  for (const [path, code, field] of cases) {
    const r = await cli(['prices', 'import', path, '--root', root, '--json']);
    assert.equal(r.code, 3, `${path}: ${r.out}${r.err}`);
    const err = JSON.parse(r.out) as { error: { code: string; details: Record<string, unknown> } };
    assert.equal(err.error.code, code, path);
    if (field) assert.equal(err.error.details.field, field, path);
  }
  assert.equal(existsSync(rootPaths(root).operatorConfig), false);
  assert.equal(configChanges(root).length, 0);
});
