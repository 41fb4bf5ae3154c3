// Gemini on Vertex AI against local fakes: Vertex's generateContent / streamGenerateContent?alt=sse / countTokens
// (the Gemini API's bodies under `/v1/projects/{p}/locations/{r}/publishers/google/models/{m}`, a bearer token in
// place of the key: fixtures/gemini-server.ts) and Google's OAuth2 token endpoint (the RFC 7523 JWT-bearer grant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { isProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer } from '#tests/providers/fixtures/server.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import pkg, { VertexGeminiProvider } from '../../providers/vertex_gemini/provider.js';
import { contractAnswer, GeminiServer, geminiErrors } from './fixtures/gemini-server.js';

const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const KEY_FILE = '/etc/cplane/vertex-sa.json';
const KEY_JSON = JSON.stringify({
  type: 'service_account',
  project_id: 'acme-prod-4711',
  private_key_id: '5f2b0c0e7d1a4b9e8c3f',
  private_key: privateKey,
  client_email: 'cplane-gateway@acme-prod-4711.iam.gserviceaccount.com',
  client_id: '104659311111111111111',
  token_uri: 'https://oauth2.googleapis.com/token',
});

interface Rig {
  vertex: GeminiServer;
  google: ScriptedServer;
  provider: VertexGeminiProvider;
  close(): Promise<void>;
}

/** The fake Vertex takes only tokens the fake token endpoint issued. */
async function rig(clock = fixedClock()): Promise<Rig> {
  const issued = new Set<string>();
  const vertex = await GeminiServer.vertex((token) => issued.has(token));
  const google = await ScriptedServer.start();
  for (let i = 0; i < 4; i += 1) {
    const token = `ya29.c.vertex-gemini-token-${i}-must-never-leak`;
    issued.add(token);
    google.push({ status: 200, body: { access_token: token, expires_in: 3599, token_type: 'Bearer' } });
  }
  const provider = new VertexGeminiProvider({
    config: {
      base_url: vertex.url,
      options: {
        region: 'europe-west4',
        service_account_file: KEY_FILE,
        token_uri: `${google.url}/token`,
        models: { 'model-under-test': 'gemini-2.5-flash', flash: 'gemini-2.5-flash' },
      },
    },
    env: {},
    clock,
    readFile: () => KEY_JSON,
  });
  return { vertex, google, provider, close: async () => void (await Promise.all([vertex.close(), google.close()])) };
}

wireContract({
  name: 'VertexGeminiProvider (generateContent and streamGenerateContent on Vertex, on 127.0.0.1)',
  secret: privateKey,
  neutralSurface: 'gemini.generate',
  generation: ['gemini.generate', 'gemini.stream'],
  errorRequestIds: false,
  scripted: true,
  async open(clock) {
    const r = await rig(clock);
    return {
      provider: r.provider,
      answer: (_surface, a) => r.vertex.push({ answer: contractAnswer(a) }),
      rateLimited: (_requestId, seconds) =>
        r.vertex.push({ status: 429, body: geminiErrors.rateLimited(`${seconds}s`) }),
      toolCall: (_surface, tool) => r.vertex.push({ answer: { functionCall: { name: tool.name, args: tool.input } } }),
      cutStream: () => r.vertex.push({ answer: { text: 'cut short here' }, cutAfterChunks: 1 }),
      received: () => r.vertex.seen.length,
      close: r.close,
    };
  },
});

const BODY = {
  contents: [{ role: 'user', parts: [{ text: 'Say hi' }] }],
  systemInstruction: { parts: [{ text: 'Be brief.' }] },
  generationConfig: { maxOutputTokens: 32, temperature: 0.1 },
};

test('vertex_gemini: the Gemini body as is, at the publishers/google path, with one cached OAuth token', async (t) => {
  const r = await rig();
  t.after(r.close);
  for (const [surface, method] of [
    ['gemini.generate', 'generateContent'],
    ['gemini.stream', 'streamGenerateContent'],
  ] as const) {
    const response = await r.provider.call(
      { surface, body: BODY, headers: {}, params: { model: 'flash' } },
      { timeoutMs: 5000 },
    );
    await readText(response.body, Number.POSITIVE_INFINITY);
    const seen = r.vertex.seen.at(-1);
    assert.equal(
      seen?.path,
      `/v1/projects/acme-prod-4711/locations/europe-west4/publishers/google/models/gemini-2.5-flash:${method}`,
    );
    assert.equal(seen?.query.get('alt'), surface === 'gemini.stream' ? 'sse' : null);
    assert.deepEqual(seen?.body, BODY);
    assert.equal(seen?.headers['x-goog-api-key'], undefined);
    assert.equal(seen?.headers.authorization, 'Bearer ya29.c.vertex-gemini-token-0-must-never-leak');
  }
  assert.equal(r.google.received.length, 1, 'the token is fetched once and cached');
  const grant = new URLSearchParams(r.google.received[0]?.body ?? '');
  assert.equal(grant.get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
});

test('vertex_gemini: GET /v1beta/models lists the configured models, answered without a call to Vertex', async (t) => {
  const r = await rig();
  t.after(r.close);
  const response = await r.provider.call({ surface: 'gemini.models', body: null, headers: {} }, { timeoutMs: 5000 });
  const listed = JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY)) as {
    models: { name: string; supportedGenerationMethods: string[] }[];
  };
  assert.deepEqual(
    listed.models.map((m) => m.name),
    ['models/model-under-test', 'models/flash'],
  );
  assert.ok(listed.models.every((m) => m.supportedGenerationMethods.includes('streamGenerateContent')));
  assert.equal(r.vertex.seen.length, 0);
  assert.equal(r.google.received.length, 0, 'no token is needed for a listing');
});

test('vertex_gemini: countTokens, and Google errors mapped as the Gemini API reads them', async (t) => {
  const r = await rig();
  t.after(r.close);
  const counted = await r.provider.call(
    { surface: 'gemini.count_tokens', body: { contents: BODY.contents }, headers: {}, params: { model: 'flash' } },
    { timeoutMs: 5000 },
  );
  assert.deepEqual(JSON.parse(await readText(counted.body, Number.POSITIVE_INFINITY)), {
    totalTokens: 11,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 11 }],
  });
  assert.match(r.vertex.seen.at(-1)?.path ?? '', /\/publishers\/google\/models\/gemini-2\.5-flash:countTokens$/);
  for (const [body, status, kind] of [
    [geminiErrors.rateLimited('3s'), 429, 'rate_limited'],
    [geminiErrors.overloaded(), 503, 'overloaded'],
    [geminiErrors.invalidArgument(), 400, 'invalid_request'],
  ] as const) {
    r.vertex.push({ status, body });
    const error = await r.provider
      .call({ surface: 'gemini.generate', body: BODY, headers: {}, params: { model: 'flash' } }, { timeoutMs: 5000 })
      .then(
        () => assert.fail('expected a ProviderError'),
        (e: unknown) => e,
      );
    assert.ok(isProviderError(error));
    assert.equal(error.kind, kind);
    if (kind === 'rate_limited') assert.equal(error.retry_after_ms, 3000);
  }
});

test('vertex_gemini: the package serves the Gemini surfaces, opt-in', () => {
  assert.deepEqual([...(pkg.serves ?? [])].sort(), ['gemini.count_tokens', 'gemini.generate', 'gemini.stream']);
  assert.equal(pkg.optIn, true);
});
