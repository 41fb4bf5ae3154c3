// Anthropic on Vertex AI against local fakes speaking the documented formats: Google's OAuth2 token endpoint (the
// JWT-bearer grant of RFC 7523: a form POST with an RS256 assertion, answered {"access_token","expires_in",
// "token_type"}), and Vertex's rawPredict / streamRawPredict (Anthropic's Messages reply and SSE, Google's error
// envelope {"error":{"code","message","status"}} or Anthropic's own error body passed through).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createVerify, generateKeyPairSync } from 'node:crypto';
import { isCpError } from '#kernel/errors.js';
import { isProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import pkg, { VertexProvider } from '../../providers/vertex/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer, type ScriptedReply } from '#tests/providers/fixtures/server.js';
import { anthropicWire } from '#tests/providers/fixtures/wire.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { wireExtras } from '#tests/providers/fixtures/wire-extras.js';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const EMAIL = 'cplane-gateway@acme-prod-4711.iam.gserviceaccount.com';
const KEY_FILE = '/etc/cplane/vertex-sa.json';
const serviceAccount = (tokenUri = 'https://oauth2.googleapis.com/token') =>
  JSON.stringify({
    type: 'service_account',
    project_id: 'acme-prod-4711',
    private_key_id: '5f2b0c0e7d1a4b9e8c3f',
    private_key: privateKey,
    client_email: EMAIL,
    client_id: '104659311111111111111',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: tokenUri,
  });

let tokens = 0;
const tokenReply = (expiresIn = 3599): ScriptedReply => ({
  status: 200,
  body: {
    access_token: `ya29.c.test-access-token-${++tokens}-must-never-leak`,
    expires_in: expiresIn,
    token_type: 'Bearer',
  },
});

interface Rig {
  vertex: ScriptedServer;
  google: ScriptedServer;
  provider: VertexProvider;
  close(): Promise<void>;
}

async function rig(clock = fixedClock(), options: Record<string, unknown> = {}): Promise<Rig> {
  const vertex = await ScriptedServer.start();
  const google = await ScriptedServer.start();
  const provider = new VertexProvider({
    config: {
      base_url: vertex.url,
      options: {
        region: 'us-east5',
        service_account_file: KEY_FILE,
        token_uri: `${google.url}/token`,
        models: { 'claude-sonnet-4-5': 'claude-sonnet-4-5@20250929', 'model-under-test': 'claude-sonnet-4-5@20250929' },
        ...options,
      },
    },
    env: {},
    clock,
    readFile: (path) => {
      assert.equal(path, KEY_FILE);
      return serviceAccount();
    },
  });
  return { vertex, google, provider, close: async () => void (await Promise.all([vertex.close(), google.close()])) };
}

const PATH = '/v1/projects/acme-prod-4711/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929';

wireContract({
  name: 'VertexProvider (rawPredict, Anthropic Messages, on 127.0.0.1)',
  secret: privateKey,
  neutralSurface: 'anthropic.messages',
  generation: ['anthropic.messages'],
  async open(clock) {
    const r = await rig(clock);
    r.google.push(tokenReply(), tokenReply());
    return {
      provider: r.provider,
      answer: (surface, answer, stream) => r.vertex.push(surfaceReply(surface, answer, stream, 'request-id')),
      rateLimited: (requestId, seconds) =>
        r.vertex.push({
          status: 429,
          headers: { 'request-id': requestId, 'retry-after': String(seconds) },
          body: {
            error: {
              code: 429,
              message:
                'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude-sonnet-4-5.',
              status: 'RESOURCE_EXHAUSTED',
            },
          },
        }),
      received: () => r.vertex.received.length,
      close: r.close,
    };
  },
});

wireExtras({
  name: 'VertexProvider',
  surface: 'anthropic.messages',
  async open() {
    const r = await rig();
    r.google.push(tokenReply(), tokenReply());
    return { provider: r.provider, server: r.vertex, close: r.close };
  },
});

function verifiedClaims(form: string, tokenUri: string): Record<string, unknown> {
  const params = new URLSearchParams(form);
  assert.equal(params.get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
  const [header, claims, signature] = String(params.get('assertion')).split('.');
  const ok = createVerify('RSA-SHA256')
    .update(`${header}.${claims}`)
    .verify(publicKey, Buffer.from(String(signature), 'base64url'));
  assert.ok(ok, 'the assertion is signed with the service account key');
  assert.deepEqual(JSON.parse(Buffer.from(String(header), 'base64url').toString()), {
    alg: 'RS256',
    typ: 'JWT',
    kid: '5f2b0c0e7d1a4b9e8c3f',
  });
  const c = JSON.parse(Buffer.from(String(claims), 'base64url').toString()) as Record<string, unknown>;
  assert.equal(c.iss, EMAIL);
  assert.equal(c.aud, tokenUri);
  assert.equal(c.scope, 'https://www.googleapis.com/auth/cloud-platform');
  assert.equal(Number(c.exp) - Number(c.iat), 3600);
  return c;
}

const message = (text = 'hi') =>
  surfaceReply(
    'anthropic.messages',
    {
      text,
      model: 'claude-sonnet-4-5-20250929',
      stop: 'stop',
      usage: { input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 },
      request_id: 'req_vrtx_011',
    },
    false,
    'request-id',
  );

test('vertex: rawPredict with the model in the URL, anthropic_version in the body, a bearer from a signed JWT', async (t) => {
  const r = await rig(fixedClock(Date.parse('2026-11-28T21:00:00Z')));
  t.after(r.close);
  r.google.push(tokenReply());
  r.vertex.push(message(), message());
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
  const response = await r.provider.call(
    { surface: 'anthropic.messages', body, headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    { timeoutMs: 5000 },
  );
  assert.equal(response.requestId, 'req_vrtx_011');
  const [req] = r.vertex.received;
  assert.equal(req?.url, `${PATH}:rawPredict`);
  assert.deepEqual(req?.json, {
    anthropic_version: 'vertex-2023-10-16',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(req?.headers['anthropic-beta'], 'context-1m-2025-08-07');
  assert.match(String(req?.headers.authorization), /^Bearer ya29\.c\.test-access-token-\d+-must-never-leak$/);
  const claims = verifiedClaims(String(r.google.received[0]?.body), `${r.google.url}/token`);
  assert.equal(claims.iat, Date.parse('2026-11-28T21:00:00Z') / 1000);
  // A stream keeps `stream: true` in the body and goes to :streamRawPredict.
  await r.provider.call(
    { surface: 'anthropic.messages', body: { ...body, stream: true }, headers: {} },
    { timeoutMs: 5000 },
  );
  assert.equal(r.vertex.received[1]?.url, `${PATH}:streamRawPredict`);
  assert.equal((r.vertex.received[1]?.json as { stream?: unknown } | undefined)?.stream, true);
  assert.equal(r.google.received.length, 1, 'the token is cached across calls');
});

test('vertex: the token is renewed shortly before it expires, and once on a 401; a second 401 stands', async (t) => {
  let now = Date.parse('2026-11-28T21:00:00Z');
  const r = await rig({ now: () => now });
  t.after(r.close);
  const send = () => r.provider.send({ model: 'claude-sonnet-4-5', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  r.google.push(tokenReply(3600), tokenReply(3600), tokenReply(3600), tokenReply(3600));
  r.vertex.push(message(), message());
  await send();
  now += 54 * 60_000; // 54 minutes: inside the hour, outside the 5-minute margin
  await send();
  assert.equal(r.google.received.length, 1);
  now += 2 * 60_000; // 56 minutes: within 5 minutes of expiry
  r.vertex.push(message());
  await send();
  assert.equal(r.google.received.length, 2);
  const unauthorized: ScriptedReply = {
    status: 401,
    body: {
      error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' },
    },
  };
  r.vertex.push(unauthorized, message('after renewal'));
  assert.equal((await send()).content, 'after renewal');
  assert.equal(r.google.received.length, 3);
  assert.notEqual(r.vertex.received.at(-1)?.headers.authorization, r.vertex.received.at(-2)?.headers.authorization);
  r.vertex.push(unauthorized, unauthorized);
  const error = await send().catch((e: unknown) => e);
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'auth');
  assert.equal(error.provider_error_type, 'UNAUTHENTICATED');
  assert.equal(r.google.received.length, 4);
  assert.ok(!JSON.stringify(error).includes('test-access-token') && !error.message.includes('PRIVATE KEY'));
});

test('vertex: a lifetime the token endpoint should not send (huge, negative, not a number) counts as an hour', async (t) => {
  let now = Date.parse('2026-11-28T21:00:00Z');
  const r = await rig({ now: () => now });
  t.after(r.close);
  const send = () => r.provider.send({ model: 'claude-sonnet-4-5', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  for (const lifetime of [1e12, -5, 'forever']) {
    const before = r.google.received.length;
    r.google.push({ ...tokenReply(), body: { access_token: `tok-${String(lifetime)}`, expires_in: lifetime } });
    r.vertex.push(message(), message(), message());
    await send();
    now += 54 * 60_000;
    await send();
    assert.equal(r.google.received.length, before + 1, `${lifetime}: one exchange inside the hour`);
    now += 2 * 60_000;
    r.google.push(tokenReply());
    await send();
    assert.equal(r.google.received.length, before + 2, `${lifetime}: renewed near the hour`);
    now += 60 * 60_000;
  }
});

test('vertex: a token endpoint refusal is an auth ProviderError before anything reaches Vertex', async (t) => {
  const r = await rig();
  t.after(r.close);
  r.google.push({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } });
  const error = await r.provider
    .send({ model: 'claude-sonnet-4-5', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 })
    .catch((e: unknown) => e);
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'auth');
  assert.equal(error.retryable, false);
  assert.match(error.message, /invalid_grant: Invalid JWT Signature/);
  assert.equal(r.vertex.received.length, 0);
  assert.ok(!JSON.stringify(error).includes('PRIVATE KEY'));
});

test('vertex: Google’s error envelope and Anthropic’s passed-through errors map to the router’s kinds', async (t) => {
  const r = await rig();
  t.after(r.close);
  r.google.push(tokenReply());
  const google = (code: number, status: string, text: string): ScriptedReply => ({
    status: code,
    body: { error: { code, message: text, status } },
  });
  const cases: [ScriptedReply, string, string][] = [
    [
      google(
        429,
        'RESOURCE_EXHAUSTED',
        'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model',
      ),
      'rate_limited',
      'RESOURCE_EXHAUSTED',
    ],
    [google(503, 'UNAVAILABLE', 'The service is currently unavailable.'), 'overloaded', 'UNAVAILABLE'],
    [google(500, 'INTERNAL', 'Internal error encountered.'), 'server_error', 'INTERNAL'],
    [
      google(403, 'PERMISSION_DENIED', "Permission 'aiplatform.endpoints.predict' denied on resource"),
      'auth',
      'PERMISSION_DENIED',
    ],
    [
      google(
        403,
        'PERMISSION_DENIED',
        'This API method requires billing to be enabled. Please enable billing on project #4711.',
      ),
      'spend_limit',
      'PERMISSION_DENIED',
    ],
    [google(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.'), 'invalid_request', 'INVALID_ARGUMENT'],
    [google(404, 'NOT_FOUND', 'Publisher Model `claude-x` not found.'), 'invalid_request', 'NOT_FOUND'],
    [{ status: 529, body: anthropicWire.error('overloaded_error', 'Overloaded') }, 'overloaded', 'overloaded_error'],
  ];
  for (const [reply, kind, type] of cases) {
    r.vertex.push({ ...reply, headers: { 'request-id': `req-${type}` } });
    const error = await r.provider
      .send({ model: 'claude-sonnet-4-5', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 })
      .catch((e: unknown) => e);
    assert.ok(isProviderError(error));
    assert.equal(error.kind, kind, JSON.stringify(reply.body));
    assert.equal(error.provider_error_type, type);
    assert.equal(error.request_id, `req-${type}`);
  }
  assert.equal(r.google.received.length, 1);
});

test('vertex: region, project and key file come from options or the environment; bad ones are ERR_PROVIDER_CONFIG', () => {
  const read = () => serviceAccount();
  const p = new VertexProvider({
    env: { GOOGLE_APPLICATION_CREDENTIALS: KEY_FILE, CLOUD_ML_REGION: 'global' },
    readFile: read,
  });
  assert.equal(p.baseUrl, 'https://aiplatform.googleapis.com');
  assert.equal(
    new VertexProvider({
      env: { GOOGLE_APPLICATION_CREDENTIALS: KEY_FILE, CLOUD_ML_REGION: 'europe-west1' },
      readFile: read,
    }).baseUrl,
    'https://europe-west1-aiplatform.googleapis.com',
  );
  const cases: [unknown, Record<string, string>, () => string, RegExp][] = [
    [undefined, { GOOGLE_APPLICATION_CREDENTIALS: KEY_FILE }, read, /region must be a Vertex region/],
    [undefined, { CLOUD_ML_REGION: 'us-east5' }, read, /no service account/],
    [
      undefined,
      { CLOUD_ML_REGION: 'us-east5', GOOGLE_APPLICATION_CREDENTIALS: KEY_FILE },
      () => '{"type":"authorized_user"}',
      /is not a service-account key file/,
    ],
    [{ options: { regoin: 'x' } }, {}, read, /unknown field\(s\) \["regoin"\]/],
  ];
  for (const [config, env, readFile, message] of cases)
    assert.throws(
      () => new VertexProvider({ config, env, readFile }),
      (e: unknown) =>
        isCpError(e) &&
        e.code === 'ERR_PROVIDER_CONFIG' &&
        message.test(e.message) &&
        !JSON.stringify(e).includes('PRIVATE KEY'),
      String(message),
    );
  assert.equal(pkg.optIn, true);
  assert.deepEqual(pkg.serves, ['anthropic.messages', 'anthropic.count_tokens']);
});

test('vertex: count_tokens goes to count-tokens:rawPredict with the Vertex model in the body; Anthropic’s reply as is', async (t) => {
  const r = await rig();
  t.after(r.close);
  r.google.push(tokenReply());
  r.vertex.push({ status: 200, headers: { 'request-id': 'req_vrtx_count' }, body: { input_tokens: 17 } });
  const body = { model: 'claude-sonnet-4-5', system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] };
  const response = await r.provider.call({ surface: 'anthropic.count_tokens', body, headers: {} }, { timeoutMs: 5000 });
  assert.equal(response.requestId, 'req_vrtx_count');
  assert.deepEqual(JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY)), { input_tokens: 17 });
  const [req] = r.vertex.received;
  assert.equal(
    req?.url,
    '/v1/projects/acme-prod-4711/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict',
  );
  assert.deepEqual(req?.json, {
    anthropic_version: 'vertex-2023-10-16',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'hi' }],
    model: 'claude-sonnet-4-5@20250929',
  });
  assert.match(String(req?.headers.authorization), /^Bearer ya29\./);
});
