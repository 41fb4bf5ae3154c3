// The wire half of the one provider contract, met by every provider: each generation surface it serves answers a
// call whole and streamed, its reader assembles the text, stop reason and typed usage from either; a failure is a
// ProviderError before any byte; the neutral send agrees with a whole call. HTTP providers are driven against a
// real 127.0.0.1 server speaking their real format; the mock answers in-process.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import type { Clock } from '../../providers/clock.js';
import { isProviderError } from '../../providers/errors.js';
import { readText } from '../../providers/http.js';
import type { Provider } from '../../providers/spec.js';
import { SseParser } from '../../providers/wire/sse.js';
import type { WireProvider, WireRequest, WireResponse, WireResult, WireSurface } from '../../providers/wire/spec.js';
import { fixedClock } from './fixtures/clock.js';
import type { WireAnswer } from './fixtures/streams.js';

export interface WireRig {
  provider: WireProvider & Provider;
  /** The next call on `surface` is answered with `answer`, as SSE events when `stream`. */
  answer(surface: WireSurface, answer: WireAnswer, stream: boolean): void | Promise<void>;
  /** The next call is refused with a 429 and `retry-after: <seconds>`. */
  rateLimited(requestId: string, retryAfterSeconds: number): void | Promise<void>;
  /** Optional: the next call on `surface` is answered with a call of `tool`, as SSE events when `stream`. */
  toolCall?(surface: WireSurface, tool: ToolCall, stream: boolean): void | Promise<void>;
  /** Optional: the next streamed call on `surface` sends its first events, then its connection is cut. */
  cutStream?(surface: WireSurface): void | Promise<void>;
  /** How many calls reached the far side so far. */
  received(): number;
  close(): Promise<void>;
}

export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
}

export interface WireHarness {
  name: string;
  /** The API key the provider was given; it must never show in a result or an error. */
  secret: string | null;
  /** The surface a neutral `send` is answered on. */
  neutralSurface: WireSurface;
  /** The generation surfaces the provider serves: each gets the contract's cases, and the provider must say so. */
  generation: readonly WireSurface[];
  /**
   * The model a reply is read as naming when the upstream's replies name none (Bedrock's Converse): the model id the
   * call addressed. Absent: the model the upstream's reply names.
   */
  replyModel?: string;
  /** Whether its error replies name a request id (Gemini's carry none, in headers or body); default true. */
  errorRequestIds?: boolean;
  /**
   * Its rig can script a tool call and a cut stream (`toolCall`, `cutStream`): those cases are registered only then,
   * so a rig without them adds no skipped tests to the count every run reports.
   */
  scripted?: boolean;
  open(clock: Clock): Promise<WireRig>;
}

const GENERATION: readonly WireSurface[] = [
  'anthropic.messages',
  'openai.chat',
  'openai.responses',
  'gemini.generate',
  'gemini.stream',
];
/** Surfaces that answer one way only (the API streams on a route of its own); the others answer both ways. */
const ONE_WAY: Partial<Record<WireSurface, boolean>> = { 'gemini.generate': false, 'gemini.stream': true };
const modesOf = (surface: WireSurface): readonly boolean[] => {
  const only = ONE_WAY[surface];
  return only === undefined ? [false, true] : [only];
};
const NOW = Date.parse('2026-03-04T05:06:07Z');
const USAGE = { input_tokens: 1500, output_tokens: 42, cache_read_tokens: 1200, cache_write_tokens: 200 };

/** A client's call on `surface`, as an SDK makes it. */
function clientRequest(surface: WireSurface, stream: boolean): WireRequest {
  if (surface === 'gemini.generate' || surface === 'gemini.stream')
    return {
      surface,
      body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 64 } },
      headers: {},
      params: { model: 'model-under-test' },
    };
  return { surface, body: clientBody(surface, stream), headers: {} };
}

function clientBody(surface: WireSurface, stream: boolean): Record<string, unknown> {
  const streamed = stream ? { stream: true } : {};
  if (surface === 'anthropic.messages')
    return { model: 'model-under-test', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...streamed };
  if (surface === 'openai.chat')
    return {
      model: 'model-under-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  return { model: 'model-under-test', input: 'hi', ...streamed };
}

async function read(provider: WireProvider, surface: WireSurface, response: WireResponse, stream: boolean) {
  const reader = provider.reader(surface);
  if (stream) {
    const parser = new SseParser();
    for await (const chunk of response.body)
      for (const frame of parser.push(chunk)) if (frame.data !== null) reader.event(frame.event, frame.data);
  } else {
    assert.equal(reader.body(JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY))), null);
  }
  return reader.result();
}

function text(result: WireResult): string {
  return result.blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

function assertNoSecret(secret: string | null, what: string, value: unknown): void {
  if (secret === null) return;
  const texts = [JSON.stringify(value) ?? '', inspect(value, { depth: 10, showHidden: true })];
  if (value instanceof Error) texts.push(`${value.message}\n${value.stack ?? ''}`);
  for (const t of texts) assert.ok(!t.includes(secret), `${what} leaks the API key`);
}

export function wireContract(harness: WireHarness): void {
  describe(`provider wire contract: ${harness.name}`, () => {
    const withRig = async (fn: (rig: WireRig) => Promise<void>): Promise<void> => {
      const rig = await harness.open(fixedClock(NOW));
      try {
        await fn(rig);
      } finally {
        await rig.close();
      }
    };

    test('it serves at least one generation surface, exactly the ones the harness runs the contract on', () =>
      withRig(async (rig) => {
        const served = rig.provider.surfaces.filter((s) => GENERATION.includes(s));
        assert.ok(served.length > 0, `surfaces: ${rig.provider.surfaces}`);
        assert.deepEqual([...served].sort(), [...harness.generation].sort());
      }));

    for (const surface of harness.generation) {
      for (const stream of modesOf(surface)) {
        for (const stop of ['stop', 'length'] as const) {
          test(`${surface}, ${stream ? 'streamed' : 'whole'}, ${stop}: text, model, stop reason, request id and usage`, () =>
            withRig(async (rig) => {
              const answer: WireAnswer = {
                text: 'The answer is 42',
                model: 'model-v7',
                stop,
                usage: USAGE,
                request_id: 'req-w-1',
              };
              await rig.answer(surface, answer, stream);
              const response = await rig.provider.call(clientRequest(surface, stream), { timeoutMs: 5000 });
              assert.equal(response.status, 200);
              assert.match(response.contentType, stream ? /^text\/event-stream/ : /json/);
              const result = await read(rig.provider, surface, response, stream);
              // The upstream's id: from its header, or (an API sending none) from the reply's body.
              assert.equal(response.requestId ?? result.response_id, 'req-w-1');
              assert.equal(text(result), 'The answer is 42');
              assert.equal(result.model, harness.replyModel ?? 'model-v7');
              assert.equal(result.stop_reason, stop);
              assert.equal(result.complete, true);
              assert.equal(result.usage_final, true);
              assert.equal(result.stream_error, null);
              const writes = surface === 'anthropic.messages' ? 200 : 0;
              assert.deepEqual(
                [
                  result.usage.input_tokens,
                  result.usage.output_tokens,
                  result.usage.cache_read_tokens,
                  result.usage.cache_write_tokens,
                ],
                [1500, 42, 1200, writes],
              );
              assert.notEqual(result.usage.raw, null);
              assert.equal(rig.received(), 1);
              assertNoSecret(harness.secret, 'the result', result);
            }));
        }
      }
    }

    test('a refusal is a ProviderError before any byte, retry-after parsed, one attempt', () =>
      withRig(async (rig) => {
        const surface = rig.provider.surfaces.find((s) => GENERATION.includes(s)) as WireSurface;
        await rig.rateLimited('req-w-429', 7);
        const error = await rig.provider.call(clientRequest(surface, true), { timeoutMs: 5000 }).then(
          () => assert.fail('expected a ProviderError'),
          (e: unknown) => e,
        );
        assert.ok(isProviderError(error), inspect(error));
        assert.equal(error.kind, 'rate_limited');
        assert.equal(error.status, 429);
        assert.equal(error.retryable, true);
        assert.equal(error.retry_after_ms, 7000);
        assert.equal(error.request_id, harness.errorRequestIds === false ? null : 'req-w-429');
        assert.equal(rig.received(), 1);
        assertNoSecret(harness.secret, 'the error', error);
      }));

    for (const surface of harness.scripted === true ? harness.generation : []) {
      for (const stream of modesOf(surface)) {
        const mode = stream ? 'streamed' : 'whole';
        test(`${surface}, ${mode}: a tool call is a tool_use block with its name and input, stopped for tool use`, () =>
          withRig(async (rig) => {
            if (rig.toolCall === undefined) assert.fail('a scripted harness whose rig cannot answer with a tool call');
            await rig.toolCall(surface, { name: 'get_weather', input: { city: 'Paris' } }, stream);
            const response = await rig.provider.call(clientRequest(surface, stream), { timeoutMs: 5000 });
            const result = await read(rig.provider, surface, response, stream);
            const calls = result.blocks.filter((b) => b.type === 'tool_use');
            assert.deepEqual(
              calls.map((b) => [b.name, b.input]),
              [['get_weather', { city: 'Paris' }]],
            );
            assert.equal(result.stop_reason, 'tool_use');
            assert.equal(result.complete, true);
          }));
        if (!stream) continue;
        test(`${surface}, streamed: a reply cut mid-stream fails after success, incomplete, its usage not final`, () =>
          withRig(async (rig) => {
            if (rig.cutStream === undefined) assert.fail('a scripted harness whose rig cannot cut a stream');
            await rig.cutStream(surface);
            const response = await rig.provider.call(clientRequest(surface, true), { timeoutMs: 5000 });
            const reader = rig.provider.reader(surface);
            const parser = new SseParser();
            const failure = await (async () => {
              for await (const chunk of response.body)
                for (const frame of parser.push(chunk)) if (frame.data !== null) reader.event(frame.event, frame.data);
            })().then(
              () => null,
              (e: unknown) => e,
            );
            assert.ok(isProviderError(failure), `the cut is a ProviderError: ${inspect(failure)}`);
            assert.equal(failure.after_success, true, 'the upstream may have billed it');
            assert.equal(failure.retryable, false);
            const result = reader.result();
            assert.equal(result.complete, false);
            assert.equal(result.usage_final, false, 'charged as unknown, never as the running count');
          }));
      }
    }

    test('the neutral send answers what a whole call on its surface answers', () =>
      withRig(async (rig) => {
        const surface = harness.neutralSurface;
        const answer: WireAnswer = {
          text: 'same either way',
          model: 'model-v8',
          stop: 'stop',
          usage: USAGE,
          request_id: 'req-n',
        };
        await rig.answer(surface, answer, false);
        const whole = await read(
          rig.provider,
          surface,
          await rig.provider.call(clientRequest(surface, false), { timeoutMs: 5000 }),
          false,
        );
        await rig.answer(surface, answer, false);
        const sent = await rig.provider.send(
          { model: 'model-under-test', max_tokens: 64, prompt: 'hi' },
          { timeoutMs: 5000 },
        );
        assert.equal(sent.content, text(whole));
        assert.equal(sent.model, whole.model);
        assert.equal(sent.stop_reason, whole.stop_reason);
        assert.equal(sent.request_id, 'req-n');
        for (const key of ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens'] as const)
          assert.equal(sent.usage[key], whole.usage[key], key);
        assert.equal(rig.received(), 2);
      }));
  });
}
