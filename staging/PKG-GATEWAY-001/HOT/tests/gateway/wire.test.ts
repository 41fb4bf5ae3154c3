import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '#providers/wire/sse.js';
import { anthropicReader } from '#providers/anthropic/wire.js';
import { openAiReader } from '#providers/openai/wire.js';
import { checkGeneration, framePolicy } from '../../gateway/request-body.js';
import { credential, identify, unverifiedSubject } from '../../gateway/identity.js';
import { endpointFor } from '../../gateway/surfaces.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

test('SSE: frames split anywhere (mid-line, mid-UTF-8 character, CRLF) come out whole, raw bytes kept', () => {
  const text = 'event: a\r\ndata: {"x":"é"}\r\n\r\n: keep-alive\n\nevent: b\ndata: one\ndata: two\n\n';
  const bytes = enc(text);
  const parser = new SseParser();
  const frames = [];
  for (let i = 0; i < bytes.length; i += 3) frames.push(...parser.push(bytes.subarray(i, i + 3)));
  assert.deepEqual(
    frames.map((f) => [f.event, f.data]),
    [
      ['a', '{"x":"é"}'],
      [null, null],
      ['b', 'one\ntwo'],
    ],
  );
  assert.equal(frames.map((f) => f.raw).join(''), text);
  assert.equal(parser.rest(), '');
});

test('SSE: every split point of every line-end style, and a long frame fed in small chunks, parse as the whole', () => {
  const text = 'event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n: c\r\n\r\n';
  const whole = new SseParser().push(enc(text));
  assert.equal(whole.length, 4);
  const bytes = enc(text);
  for (let a = 1; a < bytes.length; a++) {
    for (let b = a; b < bytes.length; b++) {
      const parser = new SseParser();
      const frames = [
        ...parser.push(bytes.subarray(0, a)),
        ...parser.push(bytes.subarray(a, b)),
        ...parser.push(bytes.subarray(b)),
      ];
      assert.deepEqual(frames, whole, `split at ${a} and ${b}`);
    }
  }
  // A 4 MiB frame in 1 KiB chunks: the search for its end resumes where the last one stopped (was quadratic).
  const big = `data: ${'x'.repeat(4 * 1024 * 1024)}\n\n`;
  const parser = new SseParser();
  const frames = [];
  const bigBytes = enc(big);
  for (let i = 0; i < bigBytes.length; i += 1024) frames.push(...parser.push(bigBytes.subarray(i, i + 1024)));
  assert.equal(frames.length, 1);
  assert.equal(frames[0]?.data?.length, 4 * 1024 * 1024);
});

test('SSE: a frame that never ends is refused at the bound instead of growing without limit', () => {
  const parser = new SseParser({ maxFrameBytes: 16, providerId: 'up' });
  // The upstream's malformed reply after its 2xx (kept charged, never retried), not an internal fault.
  assert.throws(() => parser.push(enc('data: 0123456789abcdef0123')), {
    code: 'ERR_PROVIDER_MALFORMED_RESPONSE',
    kind: 'malformed_response',
    after_success: true,
    message: /provider "up" sent an SSE frame longer than 16 bytes/,
  });
});

const ev = (reader: ReturnType<typeof anthropicReader>, name: string, data: unknown): void =>
  reader.event(name, JSON.stringify(data));

test('Anthropic stream usage: message_start overwritten field by field by the last message_delta, never summed', () => {
  const reader = anthropicReader('anthropic.messages');
  ev(reader, 'message_start', {
    type: 'message_start',
    message: {
      model: 'm',
      usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 5, output_tokens: 1 },
    },
  });
  ev(reader, 'content_block_start', { index: 0, content_block: { type: 'tool_use', id: 't', name: 'f', input: {} } });
  ev(reader, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":' } });
  ev(reader, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '1}' } });
  ev(reader, 'content_block_stop', { index: 0 });
  ev(reader, 'message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } });
  ev(reader, 'message_delta', { delta: {}, usage: { output_tokens: 9, cache_read_input_tokens: 100 } });
  assert.equal(reader.result().complete, false, 'no message_stop yet');
  ev(reader, 'message_stop', { type: 'message_stop' });
  const result = reader.result();
  assert.equal(result.complete, true);
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.output_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
    ],
    [115, 9, 100, 5],
  );
  assert.equal(result.usage_final, true);
  assert.equal(result.stop_reason, 'tool_use');
  assert.deepEqual(result.blocks, [{ type: 'tool_use', id: 't', name: 'f', input: { a: 1 } }]);
});

test('Anthropic stream cut before message_delta: usage not final, hostile frames ignored', () => {
  const reader = anthropicReader('anthropic.messages');
  reader.event('message_start', '{not json');
  ev(reader, 'message_start', { message: { usage: { input_tokens: 10, output_tokens: 1 } } });
  ev(reader, 'content_block_delta', { index: 5, delta: { type: 'text_delta', text: 'orphan' } });
  const result = reader.result();
  assert.equal(result.usage_final, false);
  assert.equal(result.complete, false);
  assert.deepEqual(result.blocks, []);
});

test('OpenAI chat stream: usage from the include_usage chunk, tool call arguments joined; [DONE] completes', () => {
  const reader = openAiReader('openai.chat');
  reader.event(
    null,
    JSON.stringify({
      model: 'g',
      choices: [{ delta: { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{"a"' } }] } }],
    }),
  );
  reader.event(
    null,
    JSON.stringify({
      choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ':2}' } }] }, finish_reason: 'tool_calls' }],
    }),
  );
  reader.event(
    null,
    JSON.stringify({
      choices: [],
      usage: { prompt_tokens: 50, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 40 } },
    }),
  );
  reader.event(null, '[DONE]');
  const r = reader.result();
  assert.deepEqual(
    [r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens, r.usage.cache_write_tokens],
    [50, 4, 40, 0],
  );
  assert.deepEqual(r.blocks, [{ type: 'tool_use', id: 'c', name: 'f', input: { a: 2 } }]);
  assert.equal(r.complete && r.usage_final, true);
});

test('OpenAI responses: response.completed carries output and usage; response.failed is a stream error', () => {
  const reader = openAiReader('openai.responses');
  reader.event('response.output_text.delta', JSON.stringify({ delta: 'par' }));
  assert.deepEqual(reader.result().blocks, [{ type: 'text', text: 'par' }], 'partial text kept when cut short');
  reader.event(
    'response.completed',
    JSON.stringify({
      response: {
        model: 'g',
        status: 'completed',
        output: [{ type: 'message', content: [{ type: 'output_text', text: 'partial' }] }],
        usage: { input_tokens: 8, output_tokens: 2, input_tokens_details: { cached_tokens: 3 } },
      },
    }),
  );
  const r = reader.result();
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens], [8, 2, 3]);
  const failed = openAiReader('openai.responses');
  failed.event(
    'response.failed',
    JSON.stringify({ response: { status: 'failed', output: [], error: { code: 'server_error', message: 'boom' } } }),
  );
  assert.match(String(failed.result().stream_error), /server_error: boom/);
});

test('frame policy: terminal events held, the unasked usage chunk stripped, the asked one forwarded', () => {
  const chat = framePolicy('openai.chat', false);
  const frame = (event: string | null, data: string | null) => ({ raw: '', event, data });
  assert.equal(chat(frame(null, '[DONE]')), 'hold');
  assert.equal(chat(frame(null, '{"choices":[],"usage":{"prompt_tokens":1}}')), 'strip');
  assert.equal(chat(frame(null, '{"choices":[{"delta":{}}],"usage":null}')), 'forward');
  assert.equal(framePolicy('openai.chat', true)(frame(null, '{"choices":[],"usage":{"prompt_tokens":1}}')), 'forward');
  assert.equal(framePolicy('anthropic.messages', false)(frame('message_stop', '{}')), 'hold');
  assert.equal(framePolicy('openai.responses', false)(frame('response.completed', '{}')), 'hold');
  // The readers take an unnamed frame's type from its data: such a terminal event is held too.
  assert.equal(framePolicy('anthropic.messages', false)(frame(null, '{"type":"message_stop"}')), 'hold');
  assert.equal(framePolicy('openai.responses', false)(frame(null, '{"type":"response.completed"}')), 'hold');
  assert.equal(framePolicy('anthropic.messages', false)(frame('ping', '{"type":"message_stop"}')), 'forward');
  // An error event ends the stream: forwarded, and nothing after it read.
  assert.equal(framePolicy('anthropic.messages', false)(frame('error', '{"type":"error","error":{}}')), 'last');
  assert.equal(chat(frame(null, '{"error":{"message":"boom"}}')), 'last');
  assert.equal(chat(frame(null, '{"choices":[{"delta":{"content":"\\"error\\""}}]}')), 'forward');
});

test('generation bodies are checked at the edge; a chat stream gets include_usage upstream only', () => {
  assert.match(String(checkGeneration('anthropic.messages', [])), /JSON object/);
  assert.match(String(checkGeneration('anthropic.messages', { model: 'm', messages: [] })), /max_tokens/);
  assert.match(String(checkGeneration('openai.chat', { model: 'm', messages: [], stream: 'yes' })), /stream/);
  assert.match(String(checkGeneration('openai.responses', { model: 'm' })), /input/);
  const chat = checkGeneration('openai.chat', {
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    max_completion_tokens: 50,
    n: 2,
  });
  assert.ok(typeof chat !== 'string');
  assert.deepEqual(chat.upstreamBody.stream_options, { include_usage: true });
  assert.equal(chat.clientWantsUsage, false);
  assert.equal(chat.bounds.max_output_tokens, 100, 'each of n choices is billed its own output');
});

test('identity: x-api-key or Bearer; session from headers or a digest of the key (never the key)', () => {
  assert.equal(credential({ 'x-api-key': 'k1' }), 'k1');
  assert.equal(credential({ authorization: 'Bearer k2' }), 'k2');
  assert.equal(credential({ authorization: 'Basic k3' }), null);
  const token = `cpt1.${Buffer.from(JSON.stringify({ sub: 'AGENT-1' })).toString('base64url')}.mac`;
  assert.equal(unverifiedSubject(token), 'AGENT-1');
  assert.equal(unverifiedSubject('cpt1.!!!.x'), '');
  assert.equal(identify({ 'x-api-key': token, 'x-claude-code-session-id': 'cc-1' }).session, 'cc-1');
  assert.equal(
    identify({ 'x-api-key': token, 'x-cplane-session': 'S', 'x-claude-code-session-id': 'cc-1' }).session,
    'S',
  );
  const derived = identify({ 'x-api-key': token, 'x-cplane-session': 'bad session\n' }).session;
  assert.match(derived, /^SES-KEY-[0-9a-f]{16}$/);
  assert.ok(!derived.includes(token));
});

test('endpoints: query string ignored by the caller, GET /v1/models by anthropic-version', () => {
  assert.equal(endpointFor('GET', '/v1/models', true)?.surface, 'anthropic.models');
  assert.equal(endpointFor('GET', '/v1/models', false)?.surface, 'openai.models');
  assert.equal(endpointFor('GET', '/v1/messages', true), null);
  assert.equal(endpointFor('POST', '/v1/responses', false)?.generation, true);
});
