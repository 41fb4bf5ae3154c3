// Azure OpenAI against a local fake speaking its documented wire format: deployment URLs with api-version, the
// api-key header or an Entra bearer, apim-request-id on every reply, streams that open with a
// prompt_filter_results chunk, and Azure's error bodies ({"error":{"code":"429",…}}, content_filter, DeploymentNotFound).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCpError } from '#kernel/errors.js';
import { isProviderError } from '#providers/errors.js';
import pkg, { AzureOpenAiProvider } from '../../providers/azure/provider.js';
import { providerContract } from '#tests/providers/contract.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { httpHarness, retryAfterHeader } from '#tests/providers/fixtures/http-harness.js';
import { ScriptedServer, type ScriptedReply } from '#tests/providers/fixtures/server.js';
import { openaiWire } from '#tests/providers/fixtures/wire.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { sseFrame, wireExtras } from '#tests/providers/fixtures/wire-extras.js';

const KEY = '9f8e7d6c5b4a39281706f5e4d3c2b1a0-azure-key-must-never-leak';

/** Azure's first stream chunk: no choices, the prompt's content filter results. */
const PROMPT_FILTER = `data: ${JSON.stringify({
  choices: [],
  created: 0,
  id: '',
  model: '',
  object: '',
  prompt_filter_results: [
    {
      prompt_index: 0,
      content_filter_results: {
        hate: { filtered: false, severity: 'safe' },
        self_harm: { filtered: false, severity: 'safe' },
        sexual: { filtered: false, severity: 'safe' },
        violence: { filtered: false, severity: 'safe' },
      },
    },
  ],
})}\n\n`;

/** An OpenAI reply as Azure sends it: apim-request-id beside x-request-id, the filter chunk first when streamed. */
function azureFramed(reply: ScriptedReply, requestId: string): ScriptedReply {
  const headers: Record<string, string> = {
    ...reply.headers,
    'apim-request-id': requestId,
    'x-request-id': `x-${requestId}`,
  };
  const streamed = typeof reply.body === 'string' && headers['content-type'] === 'text/event-stream';
  return { ...reply, headers, body: streamed ? `${PROMPT_FILTER}${reply.body as string}` : reply.body };
}

const make = (
  baseUrl: string,
  clock = fixedClock(),
  options: unknown = { deployments: { 'gpt-4.1-mini': 'chat-prod' } },
) => new AzureOpenAiProvider({ config: { base_url: baseUrl, options }, env: { AZURE_OPENAI_API_KEY: KEY }, clock });

providerContract(
  httpHarness({
    name: 'AzureOpenAiProvider (deployment on 127.0.0.1)',
    secret: KEY,
    reportsCacheWrite: false,
    makeProvider: (baseUrl, clock) => make(baseUrl, clock),
    toReply(s): ScriptedReply {
      if (s.type === 'malformed') return { status: 200, body: { object: 'chat.completion', choices: [] } };
      if (s.type === 'answer') {
        const body = openaiWire.completion({
          text: s.text,
          model: s.model,
          finish_reason: openaiWire.finishReason[s.stop] ?? 'stop',
          usage: s.usage,
        });
        return azureFramed({ status: 200, body }, s.request_id);
      }
      const body =
        s.kind === 'spend_limit'
          ? openaiWire.spendLimit()
          : { error: { code: String(s.status), message: `scripted ${s.kind}` } };
      return azureFramed({ status: s.status, headers: retryAfterHeader(s), body }, s.request_id);
    },
  }),
);

wireContract({
  name: 'AzureOpenAiProvider',
  secret: KEY,
  neutralSurface: 'openai.chat',
  generation: ['openai.chat'],
  async open(clock) {
    const server = await ScriptedServer.start();
    return {
      provider: make(server.url, clock),
      answer: (surface, answer, stream) =>
        server.push(azureFramed(surfaceReply(surface, answer, stream, 'x-request-id'), answer.request_id)),
      rateLimited: (requestId, seconds) =>
        server.push(
          azureFramed(
            {
              status: 429,
              headers: { 'retry-after': String(seconds), 'retry-after-ms': String(seconds * 1000) },
              body: {
                error: {
                  code: '429',
                  message: `Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after ${seconds} seconds.`,
                },
              },
            },
            requestId,
          ),
        ),
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

wireExtras({
  name: 'AzureOpenAiProvider',
  surface: 'openai.chat',
  async open() {
    const server = await ScriptedServer.start();
    return { provider: make(server.url), server, close: () => server.close() };
  },
  frame: (reply, stream, cut) => azureFramed(sseFrame(reply, stream, cut), reply.requestId),
});

const OK = azureFramed(
  {
    status: 200,
    body: openaiWire.completion({
      text: 'hi',
      model: 'gpt-4.1-mini-2025-04-14',
      finish_reason: 'stop',
      usage: { input_tokens: 2048, output_tokens: 300, cache_read_tokens: 1024, cache_write_tokens: 0 },
    }),
  },
  'apim-1',
);

test('azure: the deployment URL names the model’s deployment and the api-version; the key goes in api-key', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(OK, OK);
  const provider = make(server.url, fixedClock(), {
    api_version: '2025-01-01-preview',
    deployments: { 'gpt-4.1-mini': 'chat-prod' },
  });
  const sent = await provider.send({ model: 'gpt-4.1-mini', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  assert.equal(
    server.received[0]?.url,
    '/openai/deployments/chat-prod/chat/completions?api-version=2025-01-01-preview',
  );
  assert.equal(server.received[0]?.headers['api-key'], KEY);
  assert.equal(server.received[0]?.headers.authorization, undefined);
  assert.equal(sent.request_id, 'apim-1');
  assert.deepEqual(
    [sent.usage.input_tokens, sent.usage.cache_read_tokens, sent.usage.output_tokens],
    [2048, 1024, 300],
  );
  // A model with no deployment listed is taken as the deployment's name; one that is not a path segment is encoded.
  await provider.call(
    { surface: 'openai.chat', body: { model: '../x?y', messages: [] }, headers: {} },
    { timeoutMs: 5000 },
  );
  assert.equal(
    server.received[1]?.url,
    '/openai/deployments/..%2Fx%3Fy/chat/completions?api-version=2025-01-01-preview',
  );
});

test("azure: a models listing names the configured deployments' models, answered without a call to Azure", async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url, fixedClock(), { deployments: { 'gpt-4.1-mini': 'chat-prod', 'gpt-5': 'five' } });
  const reply = await provider.call({ surface: 'openai.models', body: null, headers: {} }, { timeoutMs: 5000 });
  const chunks: Uint8Array[] = [];
  for await (const chunk of reply.body) chunks.push(chunk);
  const listed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { object: string; data: { id: string }[] };
  assert.equal(reply.status, 200);
  assert.equal(listed.object, 'list');
  assert.deepEqual(
    listed.data.map((m) => m.id),
    ['gpt-4.1-mini', 'gpt-5'],
  );
  assert.equal(server.received.length, 0);
});

test('azure: with auth "entra" an Entra access token ($AZURE_OPENAI_AD_TOKEN) is the bearer, no api-key sent', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(OK);
  const token = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-token-must-not-leak';
  const provider = new AzureOpenAiProvider({
    config: { options: { auth: 'entra' } },
    env: { AZURE_OPENAI_ENDPOINT: server.url, AZURE_OPENAI_AD_TOKEN: token, AZURE_OPENAI_API_KEY: 'unused-key' },
  });
  await provider.send({ model: 'gpt-4.1-mini', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.headers.authorization, `Bearer ${token}`);
  assert.equal(server.received[0]?.headers['api-key'], undefined);
  assert.equal(server.received[0]?.url, '/openai/deployments/gpt-4.1-mini/chat/completions?api-version=2024-10-21');
});

test('azure: its error bodies map to the router’s kinds with the apim-request-id', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const cases: [number, unknown, string, string | null][] = [
    [
      429,
      {
        error: {
          code: '429',
          message: 'Requests to the ChatCompletions_Create Operation ... exceeded token rate limit',
        },
      },
      'rate_limited',
      '429',
    ],
    [
      400,
      {
        error: {
          message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
          type: null,
          param: 'prompt',
          code: 'content_filter',
          status: 400,
          innererror: {
            code: 'ResponsibleAIPolicyViolation',
            content_filter_result: { hate: { filtered: true, severity: 'high' } },
          },
        },
      },
      'invalid_request',
      'content_filter',
    ],
    [
      401,
      { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } },
      'auth',
      '401',
    ],
    [
      404,
      { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' } },
      'invalid_request',
      'DeploymentNotFound',
    ],
    [
      503,
      { error: { code: 'ServiceUnavailable', message: 'The service is temporarily unable to process your request.' } },
      'overloaded',
      'ServiceUnavailable',
    ],
    [
      500,
      { error: { code: 'InternalServerError', message: 'The server had an error.' } },
      'server_error',
      'InternalServerError',
    ],
  ];
  for (const [status, body, kind, type] of cases) {
    server.push(azureFramed({ status, body }, `apim-${status}`));
    const error = await provider
      .send({ model: 'gpt-4.1-mini', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 })
      .catch((e: unknown) => e);
    assert.ok(isProviderError(error));
    assert.equal(error.kind, kind, String(status));
    assert.equal(error.provider_error_type, type);
    assert.equal(error.request_id, `apim-${status}`);
  }
});

test('azure: no endpoint, no credentials or bad options are ERR_PROVIDER_CONFIG, never showing the key', () => {
  const cases: [unknown, Record<string, string>, RegExp][] = [
    [{}, { AZURE_OPENAI_API_KEY: 'secret-999' }, /base URL "" is not an http\(s\) URL/],
    [
      {},
      { AZURE_OPENAI_ENDPOINT: 'https://r.openai.azure.com' },
      /no API key: neither config api_key nor \$AZURE_OPENAI_API_KEY/,
    ],
    [
      { options: { auth: 'entra' } },
      { AZURE_OPENAI_ENDPOINT: 'https://r.openai.azure.com', AZURE_OPENAI_API_KEY: 'secret-999' },
      /\$AZURE_OPENAI_AD_TOKEN/,
    ],
    [{ options: { api_version: 'latest' } }, { AZURE_OPENAI_API_KEY: 'secret-999' }, /api_version must look like/],
    [
      { options: { deployments: { m: 'a/b' } } },
      { AZURE_OPENAI_API_KEY: 'secret-999' },
      /deployments\.m must be a deployment name/,
    ],
    [{ options: { region: 'x' } }, { AZURE_OPENAI_API_KEY: 'secret-999' }, /unknown field\(s\) \["region"\]/],
  ];
  for (const [config, env, message] of cases)
    assert.throws(
      () => new AzureOpenAiProvider({ config, env }),
      (e: unknown) =>
        isCpError(e) &&
        e.code === 'ERR_PROVIDER_CONFIG' &&
        message.test(e.message) &&
        !JSON.stringify(e).includes('secret-999'),
      String(message),
    );
  assert.equal(pkg.optIn, true);
  assert.deepEqual(pkg.serves, ['openai.chat', 'openai.embeddings']);
});
