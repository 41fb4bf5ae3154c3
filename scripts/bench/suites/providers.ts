// Provider overhead: what a provider adds over the bare transport it wraps. The HTTP rows compare one
// AnthropicProvider / OpenAiProvider send with a raw fetch + JSON.parse of the same reply from the same
// 127.0.0.1 server, so the ratio is the cost of validation, body building and normalisation.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEV_ROOT } from '../../lib/repo.js';
import { defineSuite, percentile, timeEachAsync, type BenchRow } from '../row.js';
import type * as AnthropicModule from '../../../staging/PKG-PROVIDER-ANTHROPIC-001/HOT/providers/anthropic/provider.js';
import type * as OpenAiModule from '../../../staging/PKG-PROVIDER-OPENAI-001/HOT/providers/openai/provider.js';
import type * as MockModule from '../../../staging/PKG-PROVIDER-MOCK-001/HOT/providers/mock/provider.js';
import type { Provider } from '../../../staging/PKG-PROVIDER-SPEC-001/HOT/providers/spec.js';

const load = async <T>(rel: string): Promise<T> => (await import(pathToFileURL(join(DEV_ROOT, 'HOT', rel)).href)) as T;

const ANTHROPIC_REPLY = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-bench',
  content: [{ type: 'text', text: 'The answer is 42' }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 1000, output_tokens: 6 },
});
const OPENAI_REPLY = JSON.stringify({
  id: 'c1',
  object: 'chat.completion',
  model: 'gpt-bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The answer is 42' }, finish_reason: 'stop' }],
  usage: {
    prompt_tokens: 1020,
    completion_tokens: 6,
    total_tokens: 1026,
    prompt_tokens_details: { cached_tokens: 1000 },
  },
});

async function startServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = req.url?.includes('chat/completions') === true ? OPENAI_REPLY : ANTHROPIC_REPLY;
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_bench' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const us = (ms: number): number => ms * 1000;

async function compare(
  name: string,
  iterations: number,
  provider: Provider,
  rawUrl: string,
  rawBody: string,
  target: string,
  limit: number,
): Promise<BenchRow> {
  const request = {
    model: 'bench-model',
    max_tokens: 64,
    prompt: 'What is the meaning of life?',
    system: [{ text: 'stable prefix', cache: true }],
  };
  const raw = async (): Promise<void> => {
    const res = await fetch(rawUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: rawBody });
    JSON.parse(await res.text());
  };
  const viaProvider = async (): Promise<void> => {
    await provider.send(request, { timeoutMs: 10_000 });
  };
  // Warm the connection pool and JIT for both paths, then interleave rounds to share machine noise.
  await timeEachAsync(50, raw);
  await timeEachAsync(50, viaProvider);
  const rawSamples: number[] = [];
  const providerSamples: number[] = [];
  for (let round = 0; round < 5; round += 1) {
    rawSamples.push(...(await timeEachAsync(iterations / 5, raw)));
    providerSamples.push(...(await timeEachAsync(iterations / 5, viaProvider)));
  }
  const value = us(percentile(providerSamples, 50));
  const baseline = us(percentile(rawSamples, 50));
  const ratio = value / baseline;
  return { name, value, unit: 'µs p50', baseline, ratio, target, ok: ratio <= limit };
}

export default defineSuite({
  name: 'providers',
  async run({ quick, log }) {
    const iterations = quick ? 200 : 1000;
    const [{ AnthropicProvider }, { OpenAiProvider }, { MockProvider }] = await Promise.all([
      load<typeof AnthropicModule>('providers/anthropic/provider.js'),
      load<typeof OpenAiModule>('providers/openai/provider.js'),
      load<typeof MockModule>('providers/mock/provider.js'),
    ]);
    const { server, url } = await startServer();
    try {
      // Warm undici and the JIT once for the whole process, so neither comparison pays for it.
      await timeEachAsync(quick ? 200 : 500, async () => {
        await (await fetch(`${url}/v1/messages`, { method: 'POST', body: '{}' })).text();
      });
      const rows: BenchRow[] = [];
      const anthropic = new AnthropicProvider({ config: { base_url: url, api_key: 'bench-key' }, env: {} });
      const rawAnthropicBody = JSON.stringify({
        model: 'bench-model',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'What is the meaning of life?' }],
      });
      rows.push(
        await compare(
          'provider.anthropic.send vs raw fetch',
          iterations,
          anthropic,
          `${url}/v1/messages`,
          rawAnthropicBody,
          'ratio <= 1.3',
          1.3,
        ),
      );
      log(`  anthropic: ${rows[0]?.value.toFixed(0)} µs vs ${rows[0]?.baseline?.toFixed(0)} µs raw`);
      const openai = new OpenAiProvider({ config: { base_url: url }, env: {} });
      rows.push(
        await compare(
          'provider.openai.send vs raw fetch',
          iterations,
          openai,
          `${url}/v1/chat/completions`,
          rawAnthropicBody,
          'ratio <= 1.3',
          1.3,
        ),
      );
      const mock = new MockProvider({ defaultResponse: 'The answer is 42' });
      const bare = async (): Promise<number> => 42;
      const mockSamples = await timeEachAsync(iterations * 5, async () => {
        await mock.send({ model: 'm', max_tokens: 1, prompt: 'x' }, { timeoutMs: 1000 });
      });
      const bareSamples = await timeEachAsync(iterations * 5, async () => {
        await bare();
      });
      const value = us(percentile(mockSamples, 50));
      rows.push({
        name: 'provider.mock.send p50',
        value,
        unit: 'µs p50',
        baseline: us(percentile(bareSamples, 50)),
        ratio: null,
        target: '< 50 µs',
        ok: value < 50,
      });
      return rows;
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  },
});
