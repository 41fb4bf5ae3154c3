// The cloud providers through the governed router (real SQLite ledger): each call one EXCHANGE with exact usage, and the cloud credentials (AWS secret key and session token, the Vertex service
// account's private key and access token) in no record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { ScriptedServer } from '../../staging/PKG-PROVIDER-SPEC-001/HOT/tests/providers/fixtures/server.js';

const { Router } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/router.js')>('HOT/router/router.js');
const { loadRouterConfig } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');
const { Ledger, verifyLedger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { BedrockProvider } = await fromDevRoot<
  typeof import('../../staging/PKG-PROVIDER-BEDROCK-001/HOT/providers/bedrock/provider.js')
>('HOT/providers/bedrock/provider.js');

const { VertexProvider } = await fromDevRoot<
  typeof import('../../staging/PKG-PROVIDER-VERTEX-001/HOT/providers/vertex/provider.js')
>('HOT/providers/vertex/provider.js');

const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY-ledger-must-not-hold';
const AWS_TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLE-ledger-must-not-hold';

function anthropicMessage(requestId: string): { status: number; headers: Record<string, string>; body: unknown } {
  return {
    status: 200,
    headers: { 'x-amzn-requestid': requestId },
    body: {
      id: 'msg_bdrk_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'text', text: 'governed answer' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 40, cache_creation_input_tokens: 300, cache_read_input_tokens: 1200, output_tokens: 9 },
    },
  };
}

test('bedrock through the router: one EXCHANGE with exact usage; no AWS secret in the ledger', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-e2e-bedrock-'));
  const server = await ScriptedServer.start();
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true });
  t.after(async () => {
    ledger.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const provider = new BedrockProvider({
    config: {
      base_url: server.url,
      options: { models: { 'claude-sonnet-4-5': 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' } },
    },
    env: {
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
      AWS_SECRET_ACCESS_KEY: AWS_SECRET,
      AWS_SESSION_TOKEN: AWS_TOKEN,
      AWS_REGION: 'us-east-1',
    },
    readFile: () => null,
  });
  const router = new Router({
    ledger,
    config: loadRouterConfig(undefined, { default_provider: 'bedrock', default_model: 'claude-sonnet-4-5' }),
    providers: [provider],
    devMode: true,
  });
  server.push(anthropicMessage('3f0a2b1c-bedrock-req-1'));
  const res = await router.route({
    prompt: 'hello',
    contract_id: 'PRC-E2E',
    agent_id: 'AGENT-E2E',
    session_id: 'SES-BEDROCK',
  });
  assert.equal(res.outcome, 'success', `${res.error_code ?? ''} ${res.error_message ?? ''}`);
  assert.equal(res.content, 'governed answer');
  assert.match(String(server.received[0]?.headers.authorization), /^AWS4-HMAC-SHA256 /);
  const [exchange, ...more] = ledger.history('SES-BEDROCK');
  assert.equal(more.length, 0);
  const m = exchange?.metadata as Record<string, unknown>;
  assert.deepEqual([m.input_tokens, m.cache_read_tokens, m.cache_write_tokens, m.output_tokens], [1540, 1200, 300, 9]);
  assert.equal(m.model_id, 'claude-sonnet-4-5-20250929');
  const everything = JSON.stringify(ledger.query({}));
  assert.equal(everything.includes(AWS_SECRET), false, 'the AWS secret key is in no record');
  assert.equal(everything.includes(AWS_TOKEN), false, 'the AWS session token is in no record');
  assert.equal(verifyLedger(ledger).ok, true);
});

test('vertex through the router: one EXCHANGE with exact usage; neither the key file’s private key nor the token in the ledger', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-e2e-vertex-'));
  const vertex = await ScriptedServer.start();
  const google = await ScriptedServer.start();
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true });
  t.after(async () => {
    ledger.close();
    await Promise.all([vertex.close(), google.close()]);
    rmSync(dir, { recursive: true, force: true });
  });
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const token = 'ya29.c.ledger-must-not-hold-this-token';
  const keyFile = JSON.stringify({
    type: 'service_account',
    project_id: 'acme-prod-4711',
    private_key_id: 'k1',
    private_key: privateKey,
    client_email: 'gw@acme-prod-4711.iam.gserviceaccount.com',
    token_uri: `${google.url}/token`,
  });
  const provider = new VertexProvider({
    config: { base_url: vertex.url, options: { region: 'us-east5', service_account_file: '/k.json' } },
    env: {},
    readFile: () => keyFile,
  });
  const router = new Router({
    ledger,
    config: loadRouterConfig(undefined, { default_provider: 'vertex', default_model: 'claude-sonnet-4-5@20250929' }),
    providers: [provider],
    devMode: true,
  });
  google.push({ status: 200, body: { access_token: token, expires_in: 3599, token_type: 'Bearer' } });
  vertex.push({ ...anthropicMessage('req_vrtx_1'), headers: { 'request-id': 'req_vrtx_1' } });
  const res = await router.route({
    prompt: 'hello',
    contract_id: 'PRC-E2E',
    agent_id: 'AGENT-E2E',
    session_id: 'SES-VERTEX',
  });
  assert.equal(res.outcome, 'success', `${res.error_code ?? ''} ${res.error_message ?? ''}`);
  assert.equal(vertex.received[0]?.headers.authorization, `Bearer ${token}`);
  const [exchange, ...more] = ledger.history('SES-VERTEX');
  assert.equal(more.length, 0);
  const m = exchange?.metadata as Record<string, unknown>;
  assert.deepEqual([m.input_tokens, m.cache_read_tokens, m.cache_write_tokens, m.output_tokens], [1540, 1200, 300, 9]);
  const everything = JSON.stringify(ledger.query({}));
  assert.equal(everything.includes(token), false, 'the access token is in no record');
  assert.equal(everything.includes('PRIVATE KEY'), false, 'the private key is in no record');
  assert.equal(verifyLedger(ledger).ok, true);
});
