// sigv4_sign_p50: one Bedrock call signed with SigV4 (SigV4Auth over @smithy/signature-v4 and node's crypto) for a
// 100 KB body, the p50 of many signings; its baseline is the floor, a bare one-shot SHA-256 of the same body in the
// same run (the part of a signature no signer can skip: the payload hash is signed), so value - baseline is what
// canonicalisation and the HMAC chain add. Where the floor itself passes 50 µs the target cannot be met.
// converse_stream_p50: one streamed Converse reply (200 text deltas) decoded and turned into Anthropic's SSE events;
// its baseline is the same reply as InvokeModel streams it (chunks carrying Anthropic's events) decoded in the same
// run, so the ratio is what mapping Converse's events costs over passing Anthropic's through.
import { hash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { DEV_ROOT } from '../../lib/repo.js';
import { SigV4Auth } from '../../../staging/PKG-PROVIDER-BEDROCK-001/HOT/providers/bedrock/sigv4.js';
import type * as ConverseRoute from '../../../staging/PKG-PROVIDER-BEDROCK-001/HOT/providers/bedrock/converse/route.js';
import type * as EventStream from '../../../staging/PKG-PROVIDER-BEDROCK-001/HOT/providers/bedrock/eventstream.js';
import type { WireResponse } from '../../../staging/PKG-PROVIDER-SPEC-001/HOT/providers/wire/spec.js';
import { type BenchRow, defineSuite, medianOf, percentile, timeEach, timeEachAsync } from '../row.js';

const load = async <T>(rel: string): Promise<T> => (await import(pathToFileURL(join(DEV_ROOT, 'HOT', rel)).href)) as T;

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);
const frame = (type: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: Buffer.from(JSON.stringify(payload), 'utf8'),
  });
const chunk = (event: Record<string, unknown>): Uint8Array =>
  frame('chunk', { bytes: Buffer.from(JSON.stringify(event), 'utf8').toString('base64'), p: 'abcdefgh' });

/** The same 200-delta reply as ConverseStream and as InvokeModelWithResponseStream send it. */
function replies(): { converse: Buffer; invoke: Buffer } {
  const words = Array.from({ length: 200 }, (_, i) => `word${i} `);
  const usage = { inputTokens: 1200, outputTokens: 400, totalTokens: 1600 };
  const converse = [
    frame('messageStart', { role: 'assistant', p: 'abc' }),
    ...words.map((text) => frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text }, p: 'abcdefgh' })),
    frame('contentBlockStop', { contentBlockIndex: 0, p: 'ab' }),
    frame('messageStop', { stopReason: 'end_turn', p: 'abcd' }),
    frame('metadata', { usage, metrics: { latencyMs: 900 }, p: 'abc' }),
  ];
  const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null };
  const invoke = [
    chunk({ type: 'message_start', message: { ...message, usage: { input_tokens: 1200, output_tokens: 1 } } }),
    chunk({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    ...words.map((text) => chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    chunk({ type: 'content_block_stop', index: 0 }),
    chunk({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 400 } }),
    chunk({ type: 'message_stop' }),
  ];
  return { converse: Buffer.concat(converse), invoke: Buffer.concat(invoke) };
}

const response = (bytes: Buffer): WireResponse => ({
  status: 200,
  contentType: 'application/vnd.amazon.eventstream',
  requestId: 'r',
  cancel: () => {},
  body: (async function* () {
    yield bytes;
  })(),
});

async function drain(body: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const _ of body);
}

async function converseRow(quick: boolean, log: (line: string) => void): Promise<BenchRow> {
  const route = await load<typeof ConverseRoute>('providers/bedrock/converse/route.js');
  const stream = await load<typeof EventStream>('providers/bedrock/eventstream.js');
  const { converse, invoke } = replies();
  const mapped = () => drain(route.converseReply('bedrock', response(converse), 'meta.llama', true).body);
  const passed = () => drain(stream.eventStreamReply('bedrock', response(invoke)).body);
  const iterations = quick ? 100 : 500;
  for (let i = 0; i < 20; i += 1) await Promise.all([mapped(), passed()]);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < (quick ? 3 : 5); r += 1) {
    a.push(percentile(await timeEachAsync(iterations, mapped), 50));
    b.push(percentile(await timeEachAsync(iterations, passed), 50));
  }
  const value = medianOf(a) * 1000;
  const baseline = medianOf(b) * 1000;
  log(
    `clouds: a 200-delta ConverseStream reply mapped ${value.toFixed(1)} µs p50, as InvokeModel ${baseline.toFixed(1)} µs`,
  );
  return {
    name: 'converse_stream_p50',
    value: Math.round(value * 10) / 10,
    unit: 'µs p50 (a 200-delta ConverseStream reply to Anthropic SSE)',
    baseline: Math.round(baseline * 10) / 10,
    ratio: value / baseline,
    target: '<= 1.5x InvokeModel',
    ok: value / baseline <= 1.5,
  };
}

export default defineSuite({
  name: 'clouds',
  async run({ quick, log }) {
    const clock = { now: () => Date.parse('2026-11-28T21:00:00Z') };
    const auth = new SigV4Auth(
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'tok' },
      'us-east-1',
      'bedrock',
      clock,
    );
    const text = 'x'.repeat(100 * 1024 - 200);
    const body = JSON.stringify({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 1024,
      messages: [{ role: 'user', content: text }],
    });
    const call = {
      url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body,
    };
    const iterations = quick ? 500 : 3000;
    const rounds = quick ? 3 : 5;
    for (let i = 0; i < 200; i += 1) await auth.sign(call);
    const signed: number[] = [];
    const hashed: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      signed.push(percentile(await timeEachAsync(iterations, async () => void (await auth.sign(call))), 50));
      hashed.push(
        percentile(
          timeEach(iterations, () => void hash('sha256', body)),
          50,
        ),
      );
    }
    const value = medianOf(signed) * 1000;
    const baseline = medianOf(hashed) * 1000;
    const above = `${(value - baseline).toFixed(1)} µs above the floor`;
    log(
      `clouds: SigV4 of a ${body.length}-byte body ${value.toFixed(1)} µs p50; the floor, its SHA-256 alone, ${baseline.toFixed(1)} µs; ${above}`,
    );
    return [
      await converseRow(quick, log),
      {
        name: 'sigv4_sign_p50',
        value: Math.round(value * 10) / 10,
        unit: `µs p50 (one Bedrock InvokeModel call, 100 KB body; baseline: the SHA-256 floor, ${above})`,
        baseline: Math.round(baseline * 10) / 10,
        ratio: value / baseline,
        target: '<= 50 µs',
        ok: value <= 50,
      },
    ];
  },
});
