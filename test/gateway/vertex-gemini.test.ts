// Gemini on Vertex AI chosen by operator config (`gateway.upstreams.gemini = vertex_gemini`), behind `cplane serve` on
// a bootstrapped root: the official @google/genai SDK reaches a local Vertex (its publishers/google path, a bearer it
// issued at a local OAuth2 token endpoint); each call is one EXCHANGE with exact usage, and neither the service
// account's private key nor the access token reaches the ledger or the logs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GoogleGenAI } from '@google/genai';
import { ScriptedServer } from '../../staging/PKG-PROVIDER-SPEC-001/HOT/tests/providers/fixtures/server.js';
import {
  DEFAULT_USAGE,
  GeminiServer,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

const TOKEN = 'ya29.c.served-vertex-gemini-token-must-not-leak';
const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

let served: Served;
let vertex: GeminiServer;
let google: ScriptedServer;
let key: string;
let dir: string;

before(async () => {
  vertex = await GeminiServer.vertex((token) => token === TOKEN);
  google = await ScriptedServer.start();
  for (let i = 0; i < 3; i += 1)
    google.push({ status: 200, body: { access_token: TOKEN, expires_in: 3599, token_type: 'Bearer' } });
  dir = mkdtempSync(join(tmpdir(), 'cp-vertex-gemini-'));
  const keyFile = join(dir, 'sa.json');
  writeFileSync(
    keyFile,
    JSON.stringify({
      type: 'service_account',
      project_id: 'acme-prod-4711',
      private_key_id: '5f2b0c0e7d1a4b9e8c3f',
      private_key: privateKey,
      client_email: 'cplane-gateway@acme-prod-4711.iam.gserviceaccount.com',
      client_id: '104659311111111111111',
      token_uri: 'https://oauth2.googleapis.com/token',
    }),
  );
  served = await startServed([], (root) => {
    configSet(root, 'gateway.upstreams.gemini', 'vertex_gemini');
    configSet(
      root,
      'providers.vertex_gemini',
      JSON.stringify({
        base_url: vertex.url,
        options: {
          region: 'europe-west4',
          service_account_file: keyFile,
          token_uri: `${google.url}/token`,
        },
      }),
    );
  });
  key = issueKey('AGENT-VERTEX-GEMINI');
});
after(async () => {
  await served.cleanup();
  await vertex.close();
  await google.close();
  rmSync(dir, { recursive: true, force: true });
});

const client = (session: string): GoogleGenAI =>
  new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: served.url, headers: { 'x-cplane-session': session } } });

function oneExchange(session: string): Record<string, unknown> {
  const exchanges = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
  );
  assert.equal(exchanges.length, 1, `one EXCHANGE for ${session}`);
  return exchanges[0]?.metadata ?? {};
}

test('@google/genai through vertex_gemini: generateContent and a stream reach Vertex with its bearer; exact usage', async () => {
  const reply = await client('SES-VG-1').models.generateContent({
    model: 'gemini-2.5-flash',
    contents: 'Hello',
    config: { maxOutputTokens: 256 },
  });
  assert.equal(reply.text, 'Hello from Gemini');
  const seen = vertex.seen.at(-1);
  assert.equal(
    seen?.path,
    '/v1/projects/acme-prod-4711/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent',
  );
  assert.equal(seen?.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen?.headers['x-goog-api-key'], undefined, "the client's cplane key is not passed on");
  const u = DEFAULT_USAGE;
  const meta = oneExchange('SES-VG-1');
  assert.deepEqual(
    [meta.input_tokens, meta.output_tokens, meta.cache_read_tokens, meta.cache_write_tokens, meta.usage_complete],
    [u.prompt, u.candidates + (u.thoughts ?? 0), u.cached, 0, true],
  );

  let text = '';
  for await (const chunk of await client('SES-VG-2').models.generateContentStream({
    model: 'gemini-2.5-flash',
    contents: 'Hello again',
    config: { maxOutputTokens: 256 },
  }))
    text += chunk.text ?? '';
  assert.equal(text, 'Hello from Gemini');
  assert.match(vertex.seen.at(-1)?.path ?? '', /:streamGenerateContent$/);
  assert.equal(vertex.seen.at(-1)?.query.get('alt'), 'sse');
  assert.equal(oneExchange('SES-VG-2').usage_complete, true);
  assert.equal(google.received.length, 1, 'one access token, cached across calls');
  const everything = JSON.stringify(ledgerEntries(served.root)) + served.stdout() + served.stderr();
  assert.equal(everything.includes(TOKEN), false, 'the access token is nowhere');
  assert.equal(everything.includes('PRIVATE KEY'), false, 'the private key is nowhere');
});
