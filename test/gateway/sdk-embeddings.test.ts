// The official OpenAI SDK's `embeddings.create` against `cplane serve`, whose OpenAI upstream is a local fake
// speaking the embeddings API as OpenAI documents it (platform.openai.com/docs/api-reference/embeddings): a list of
// `{object: "embedding", index, embedding}` with `usage: {prompt_tokens, total_tokens}`, each embedding an array of
// floats or (`encoding_format: "base64"`, the SDK's default) the base64 of its little-endian float32 bytes.
// Each call is governed like a generation: authenticated, reserved on its input, settled from prompt_tokens at the
// model's price, one EXCHANGE recording the input and the vectors' count and dimensions, never the vectors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { budgetEntries, cli, configSet, issueKey, KEYS, ledgerEntries, startServed, type Served } from './harness.js';

/** A deterministic vector: component j of input i. Exact in float32, so a base64 round trip loses nothing. */
const component = (i: number, j: number): number => (i + 1) * 0.5 + j * 0.25;

/** Words as the fake's token count: what an honest upstream reports, small enough for any reservation bound. */
const tokensOf = (input: unknown): number => {
  const items = Array.isArray(input) ? input : [input];
  return items.reduce<number>(
    (n, item) => n + (typeof item === 'string' ? item.split(/\s+/).filter(Boolean).length : (item as unknown[]).length),
    0,
  );
};

interface Fake {
  url: string;
  bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

async function fakeOpenAi(): Promise<Fake> {
  const bodies: Record<string, unknown>[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/embeddings' || req.headers.authorization !== `Bearer ${KEYS.openai}`) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: { message: 'not here', type: 'invalid_request_error', param: null, code: null } }),
        );
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      bodies.push(body);
      const inputs = Array.isArray(body.input) && typeof body.input[0] !== 'number' ? body.input : [body.input];
      const dims = typeof body.dimensions === 'number' ? body.dimensions : 6;
      const data = inputs.map((_, i) => {
        const floats = Array.from({ length: dims }, (_, j) => component(i, j));
        const embedding =
          body.encoding_format === 'base64' ? Buffer.from(new Float32Array(floats).buffer).toString('base64') : floats;
        return { object: 'embedding', index: i, embedding };
      });
      const prompt = tokensOf(body.input);
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_emb_${bodies.length}` });
      res.end(
        JSON.stringify({
          object: 'list',
          data,
          model: body.model,
          usage: { prompt_tokens: prompt, total_tokens: prompt },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let served: Served;
let fake: Fake;
let key: string;
const client = (session: string, apiKey = key): OpenAI =>
  new OpenAI({ apiKey, baseURL: `${served.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-cplane-session': session } });

before(async () => {
  fake = await fakeOpenAi();
  served = await startServed(
    [],
    (root) => configSet(root, 'budget.limits.session', JSON.stringify({ by_id: { 'SES-E-CAP': { max_cost: 1 } } })),
    { OPENAI_BASE_URL: fake.url },
  );
  key = issueKey('AGENT-EMB');
});
after(async () => {
  await served.cleanup();
  await fake.close();
});

function onlyExchange(session: string): Record<string, unknown> {
  const list = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
  );
  assert.equal(list.length, 1, `one EXCHANGE for ${session}`);
  return list[0]?.metadata ?? {};
}

test('float vectors: the client gets them whole; the EXCHANGE records the input, the count and dimensions, exact usage', async () => {
  const reply = await client('SES-E-FLOAT').embeddings.create({
    model: 'text-embedding-3-small',
    input: ['the quick brown fox', 'jumps over'],
    encoding_format: 'float',
  });
  assert.deepEqual(
    reply.data.map((d) => d.embedding),
    [0, 1].map((i) => Array.from({ length: 6 }, (_, j) => component(i, j))),
  );
  assert.deepEqual(reply.usage, { prompt_tokens: 6, total_tokens: 6 });
  const meta = onlyExchange('SES-E-FLOAT');
  assert.equal(meta.surface, 'openai.embeddings');
  assert.deepEqual([meta.input_tokens, meta.output_tokens, meta.usage_complete], [6, 0, true]);
  assert.deepEqual(JSON.parse(String(meta.response)), [
    { type: 'embeddings', count: 2, dimensions: 6, encoding: 'float' },
  ]);
  const exported = cli(['ledger', 'export', '--root', served.root]).stdout;
  assert.ok(exported.includes('the quick brown fox'), 'the input is recorded');
  assert.ok(!exported.includes(String(component(1, 5))), 'no vector is recorded');
});

test('base64 (the SDK default): decoded by the SDK to the same floats; recorded as base64 of the asked dimensions', async () => {
  const reply = await client('SES-E-B64').embeddings.create({
    model: 'text-embedding-3-large',
    input: 'one two three',
    dimensions: 4,
  });
  assert.equal(fake.bodies.at(-1)?.encoding_format, 'base64', 'the SDK asked for base64');
  assert.deepEqual(
    reply.data[0]?.embedding,
    [0, 1, 2, 3].map((j) => component(0, j)),
  );
  const meta = onlyExchange('SES-E-B64');
  assert.deepEqual(JSON.parse(String(meta.response)), [
    { type: 'embeddings', count: 1, dimensions: 4, encoding: 'base64' },
  ]);
  assert.equal(meta.input_tokens, 3);
});

test('budgeted: reserved on the input with no output, settled from prompt_tokens at the model price under a cost limit', async () => {
  await client('SES-E-CAP').embeddings.create({
    model: 'text-embedding-3-small',
    input: 'a b c d e',
    encoding_format: 'float',
  });
  const records = budgetEntries(served.root).filter((e) => e.metadata.session_id === 'SES-E-CAP');
  const allocated = records.find((e) => e.event_type === 'BUDGET_ALLOCATED');
  const settled = records.find((e) => e.event_type === 'BUDGET_SETTLED');
  assert.ok(allocated && settled, JSON.stringify(records.map((e) => e.event_type)));
  const reserved = Number(allocated.metadata.reserved_tokens);
  assert.ok(reserved >= 5 && reserved < 200, `reservation bounded by the input's size, got ${reserved}`);
  assert.equal(settled.metadata.charged_tokens, 5);
  // text-embedding-3-small: USD 0.02 per million input tokens.
  assert.equal(settled.metadata.cost, 1e-7); // 5 × 0.02 / 1e6
});

test('an unpriced embedding model under a cost limit is refused BUDGET_PRICE_UNKNOWN before anything is sent', async () => {
  const before = fake.bodies.length;
  await assert.rejects(
    client('SES-E-CAP').embeddings.create({ model: 'mystery-embed-1', input: 'x', encoding_format: 'float' }),
    (error: unknown) => error instanceof OpenAI.APIError && /BUDGET_PRICE_UNKNOWN/.test(error.message),
  );
  assert.equal(fake.bodies.length, before);
});

test('hostile bodies are refused at the edge (400), unauthenticated calls 401; nothing reaches the upstream', async () => {
  const before = fake.bodies.length;
  for (const input of [[], '', [1.5], ['ok', 3], Array.from({ length: 2049 }, () => 'x')]) {
    await assert.rejects(
      client('SES-E-BAD').embeddings.create({ model: 'text-embedding-3-small', input: input as string }),
      (error: unknown) => error instanceof OpenAI.BadRequestError,
      JSON.stringify(input).slice(0, 40),
    );
  }
  await assert.rejects(
    client('SES-E-BAD').embeddings.create({ model: 'text-embedding-3-small', input: 'x', dimensions: 0 }),
    OpenAI.BadRequestError,
  );
  await assert.rejects(
    client('SES-E-BAD', 'not-a-key').embeddings.create({ model: 'text-embedding-3-small', input: 'x' }),
    OpenAI.AuthenticationError,
  );
  assert.equal(fake.bodies.length, before);
});
