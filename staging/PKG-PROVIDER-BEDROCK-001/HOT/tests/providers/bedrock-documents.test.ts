// Messages document blocks through Bedrock Converse as AWS documents its DocumentBlock (API_runtime_DocumentBlock,
// API_runtime_DocumentSource): a base64 PDF as bytes, plain text as text, the title as the required name, the context
// as is; what Converse cannot take back (citations) or at all (URL and file sources) is refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { isProviderError } from '#providers/errors.js';
import { BedrockProvider } from '../../providers/bedrock/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer } from '#tests/providers/fixtures/server.js';
import { converseWhole } from './converse-fake.js';

const ENV = { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret', AWS_REGION: 'us-east-1' };
const NOVA = 'us.amazon.nova-pro-v1:0';
// The first bytes of a PDF (`%PDF-1.7`), base64.
const PDF = 'JVBERi0xLjcKJeLjz9MK';

const make = (baseUrl: string) =>
  new BedrockProvider({
    config: { base_url: baseUrl, options: { models: { nova: NOVA } } },
    env: ENV,
    clock: fixedClock(),
    readFile: () => null,
  });

const ask = (content: unknown[]) => ({ model: 'nova', max_tokens: 256, messages: [{ role: 'user', content }] });

test('converse documents: a PDF as bytes, plain text as text, the title as the name, a cache breakpoint after', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(
    converseWhole('req-doc-1', [{ text: 'Both say 42.' }], 'end_turn', { inputTokens: 1800, outputTokens: 5 }),
  );
  const body = ask([
    {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF },
      title: 'Annual report (2026)',
      context: 'Audited figures',
      cache_control: { type: 'ephemeral' },
    },
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The answer is 42.' } },
    { type: 'text', text: 'What do they say?' },
  ]);
  await make(server.url).call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
  assert.deepEqual((server.received[0]?.json as { messages?: unknown[] } | undefined)?.messages, [
    {
      role: 'user',
      content: [
        {
          document: { name: 'Annual report (2026)', format: 'pdf', source: { bytes: PDF }, context: 'Audited figures' },
        },
        { cachePoint: { type: 'default' } },
        { document: { name: 'Document 2', format: 'txt', source: { text: 'The answer is 42.' } } },
        { text: 'What do they say?' },
      ],
    },
  ]);
});

test('converse documents: URL sources, other media, names Converse refuses and citations are refused by name', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const pdf = { type: 'base64', media_type: 'application/pdf', data: PDF };
  const cases: [Record<string, unknown>, string][] = [
    [{ type: 'document', source: { type: 'url', url: 'https://x/y.pdf' } }, 'messages[0].content[0].source.url'],
    [
      { type: 'document', source: { type: 'base64', media_type: 'image/png', data: PDF } },
      'messages[0].content[0].source.type',
    ],
    [{ type: 'document', source: pdf, title: 'report.pdf' }, 'messages[0].content[0].title'],
    [{ type: 'document', source: pdf, citations: { enabled: true } }, 'messages[0].content[0].citations'],
  ];
  for (const [block, field] of cases) {
    const error = await make(server.url)
      .call({ surface: 'anthropic.messages', body: ask([block]), headers: {} }, { timeoutMs: 5000 })
      .then(
        () => assert.fail(`${field}: expected a refusal`),
        (e: unknown) => e,
      );
    assert.ok(isProviderError(error) && error.message.includes(JSON.stringify(field)), inspect(error));
  }
  assert.equal(server.received.length, 0);
});
