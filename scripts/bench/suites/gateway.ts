// The gateway's added latency: the same local upstream called directly and through an in-process Gateway with a
// durable ledger (synchronous=FULL) and the root's budget config, sequential calls, same process for both paths.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { frames, message } from '../peers/anthropic-reply.js';
import { inProcessGateway, UPSTREAM_KEY } from '../peers/in-process-gateway.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';

function upstream(): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const frame of frames) res.write(frame);
        res.end();
      } else {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(message)),
        });
        res.end(message);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const url = (server: Server): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** One call; resolves with [ms to the first body byte, ms to the end]. */
async function timed(target: string, headers: Record<string, string>, stream: boolean): Promise<[number, number]> {
  const start = process.hrtime.bigint();
  const res = await fetch(`${target}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      stream,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
  });
  const reader = res.body!.getReader();
  let first = 0;
  for (;;) {
    const { done } = await reader.read();
    if (first === 0) first = Number(process.hrtime.bigint() - start) / 1e6;
    if (done) break;
  }
  if (res.status !== 200) throw new Error(`bench call answered ${res.status}`);
  return [first, Number(process.hrtime.bigint() - start) / 1e6];
}

export default defineSuite({
  name: 'gateway',
  async run({ quick, tmp }) {
    const n = quick ? 200 : 1000;
    const up = await upstream();
    const served = await inProcessGateway({ tmp, name: 'gateway', upstreamUrl: url(up) });
    const via = served.url;
    const key = served.key;
    const direct = { 'x-api-key': UPSTREAM_KEY };
    // Spread over sessions: a session's rate limit (600 calls a minute) is not what this measures.
    const governed = (i: number): Record<string, string> => ({
      'x-api-key': key,
      'x-cplane-session': `SES-BENCH-${i % 64}`,
    });
    const rows: BenchRow[] = [];
    try {
      for (let i = 0; i < 20; i += 1) {
        await timed(url(up), direct, false);
        await timed(via, governed(i), false);
      }
      // Interleaved, so both paths see the same machine state.
      const plain: number[] = [];
      const viaGateway: number[] = [];
      const plainTtft: number[] = [];
      const viaTtft: number[] = [];
      for (let i = 0; i < n; i += 1) {
        plain.push((await timed(url(up), direct, false))[1]);
        viaGateway.push((await timed(via, governed(i), false))[1]);
        plainTtft.push((await timed(url(up), direct, true))[0]);
        viaTtft.push((await timed(via, governed(i), true))[0]);
      }
      const us = (ms: number): number => Math.round(ms * 1000);
      const p50 = us(percentile(viaGateway, 50) - percentile(plain, 50));
      const p99 = us(percentile(viaGateway, 99) - percentile(plain, 99));
      const ttft = us(percentile(viaTtft, 50) - percentile(plainTtft, 50));
      rows.push(
        {
          name: 'gateway_overhead_p50',
          value: p50,
          unit: 'µs',
          baseline: us(percentile(plain, 50)),
          ratio: null,
          target: '<= 500 µs',
          ok: p50 <= 500,
        },
        {
          name: 'gateway_overhead_p99',
          value: p99,
          unit: 'µs',
          baseline: us(percentile(plain, 99)),
          ratio: null,
          target: '<= 2000 µs',
          ok: p99 <= 2000,
        },
        {
          name: 'gateway_ttft_overhead_p50',
          value: ttft,
          unit: 'µs',
          baseline: us(percentile(plainTtft, 50)),
          ratio: null,
          target: '<= 1000 µs',
          ok: ttft <= 1000,
        },
      );
    } finally {
      await served.close();
      await new Promise((resolve) => up.close(resolve));
    }
    return rows;
  },
});
