// The gateway's Gemini surface at the edge: its paths (the model named in them), its credentials, its error shape, the
// bounds of a generateContent body, and which streamed chunk ends a reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE_TOKENS } from '#budgeter/bound.js';
import { parseFrame } from '#providers/wire/sse.js';
import { checkGeminiGeneration } from '../../gateway/gemini-body.js';
import { credential } from '../../gateway/identity.js';
import { DEFAULT_OUTPUT_BOUND, type Generation, framePolicy } from '../../gateway/request-body.js';
import { endpointFor, errorBody, familyOf, passedQuery } from '../../gateway/surfaces.js';

test('gemini paths: the method after the colon picks the surface, the model is read from the path, nothing else matches', () => {
  assert.deepEqual(endpointFor('POST', '/v1beta/models/gemini-2.5-flash:generateContent', false), {
    surface: 'gemini.generate',
    generation: true,
    family: 'gemini',
    method: 'POST',
    params: { model: 'gemini-2.5-flash' },
  });
  assert.equal(
    endpointFor('POST', '/v1beta/models/gemini-2.5-pro:streamGenerateContent', false)?.surface,
    'gemini.stream',
  );
  const counted = endpointFor('POST', '/v1beta/models/gemini-2.5-pro:countTokens', false);
  assert.deepEqual([counted?.surface, counted?.generation], ['gemini.count_tokens', false]);
  assert.equal(endpointFor('GET', '/v1beta/models', false)?.surface, 'gemini.models');
  for (const [method, path] of [
    ['POST', '/v1beta/models/gemini-2.5-flash:embedContent'],
    ['POST', '/v1beta/models/gemini-2.5-flash:constructor'],
    ['POST', '/v1beta/models/gemini%2F..%2Fx:generateContent'],
    ['POST', '/v1beta/models/a/b:generateContent'],
    ['POST', '/v1beta/models/:generateContent'],
    ['GET', '/v1beta/models/gemini-2.5-flash:generateContent'],
    ['POST', '/v1beta/models'],
  ] as const)
    assert.equal(endpointFor(method, path, false), null, `${method} ${path}`);
  assert.equal(familyOf('/v1beta/anything', false), 'gemini');
});

test('gemini credentials: x-goog-api-key or ?key= on the Gemini surface only; the models list passes its paging, never the key', () => {
  const google = { search: 'alt=sse&key=k-query' };
  assert.equal(credential({ 'x-goog-api-key': 'k-header' }, google), 'k-header');
  assert.equal(credential({}, google), 'k-query');
  assert.equal(credential({ 'x-api-key': 'k1', 'x-goog-api-key': 'k2' }, google), 'k1');
  assert.equal(credential({ 'x-goog-api-key': 'k-header' }), null, 'not a credential on the other surfaces');
  assert.equal(credential({}, { search: 'alt=sse' }), null);
  assert.deepEqual(passedQuery('gemini.models', 'pageSize=50&pageToken=abc&key=secret'), {
    pageSize: '50',
    pageToken: 'abc',
  });
  assert.deepEqual(passedQuery('gemini.generate', 'alt=sse&key=secret'), {});
});

test("gemini errors: Google's shape, its code the status sent and its status Google's name for the kind", () => {
  assert.deepEqual(errorBody('gemini', 'authentication', 'AUTH_MISSING: no key', 'req_1', 401), {
    error: { code: 401, message: 'AUTH_MISSING: no key', status: 'UNAUTHENTICATED' },
  });
  assert.deepEqual(errorBody('gemini', 'budget', 'over', 'req_1', 429), {
    error: { code: 429, message: 'over', status: 'RESOURCE_EXHAUSTED' },
  });
  assert.deepEqual(errorBody('gemini', 'overloaded', 'busy', 'req_1'), {
    error: { code: 503, message: 'busy', status: 'UNAVAILABLE' },
  });
});

const contents = [{ role: 'user', parts: [{ text: 'hi' }] }];
const gen = (body: unknown, surface: 'gemini.generate' | 'gemini.stream' = 'gemini.generate'): Generation => {
  const checked = checkGeminiGeneration(surface, body, 'gemini-2.5-flash');
  assert.equal(typeof checked, 'object', String(checked));
  return checked as Generation;
};

test('gemini bodies: the model from the path, the prompt its conversation fields in order, the output bound from generationConfig', () => {
  const body = {
    generationConfig: { maxOutputTokens: 300, candidateCount: 2 },
    contents,
    systemInstruction: { parts: [{ text: 'terse' }] },
    tools: [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }] }],
  };
  const checked = gen(body);
  assert.equal(checked.model, 'gemini-2.5-flash');
  assert.equal(checked.stream, false);
  assert.equal(gen({ contents }, 'gemini.stream').stream, true);
  assert.equal(checked.upstreamBody, body, 'sent as the client sent it');
  assert.deepEqual(Object.keys(JSON.parse(checked.prompt)), ['tools', 'systemInstruction', 'contents']);
  assert.equal(checked.bounds.max_output_tokens, 600, 'each candidate is billed its own output');
  assert.equal(checked.outputLimit, null);
  assert.equal(gen({ contents }).bounds.max_output_tokens, DEFAULT_OUTPUT_BOUND);
  const plain = gen({ contents });
  assert.ok(plain.bounds.estimated_input_tokens >= Buffer.byteLength(JSON.stringify({ contents })));
  assert.equal(plain.inputLimit, plain.bounds.estimated_input_tokens);
  const image = gen({
    contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0K' } }] }],
  });
  assert.ok(image.bounds.estimated_input_tokens >= IMAGE_TOKENS, 'an image costs its tokens, not its bytes');
  const video = gen({
    contents: [{ role: 'user', parts: [{ fileData: { mimeType: 'video/mp4', fileUri: 'https://x/f' } }] }],
  });
  assert.equal(video.inputLimit, null, 'an uploaded file is billed beyond its bytes here');
  assert.equal(gen({ contents, cachedContent: 'cachedContents/abc' }).inputLimit, null);
  for (const [bad, problem] of [
    [[], /JSON object/],
    [{}, /contents/],
    [{ contents: [] }, /contents/],
    [{ contents, generationConfig: [] }, /generationConfig/],
    [{ contents, generationConfig: { maxOutputTokens: 0 } }, /maxOutputTokens/],
    [{ contents, generationConfig: { maxOutputTokens: 1.5 } }, /maxOutputTokens/],
    [{ contents, generationConfig: { candidateCount: 101 } }, /candidateCount/],
  ] as const)
    assert.match(String(checkGeminiGeneration('gemini.generate', bad, 'gemini-2.5-flash')), problem);
  const several = { contents, generationConfig: { candidateCount: 2 } };
  assert.match(String(checkGeminiGeneration('gemini.stream', several, 'gemini-2.5-flash')), /one candidate/);
});

test('gemini streams: the chunk with the finish reason (or a blocked prompt) is held, an error chunk is the last', () => {
  const policy = framePolicy('gemini.stream', false);
  const frame = (value: unknown) => parseFrame(`data: ${JSON.stringify(value)}\r\n\r\n`);
  const text = { candidates: [{ content: { parts: [{ text: 'finishReason' }], role: 'model' } }] };
  assert.equal(policy(frame(text)), 'forward', 'the words in a text are not the field');
  assert.equal(policy(frame({ candidates: [{ content: { parts: [] }, finishReason: 'STOP' }] })), 'hold');
  assert.equal(policy(frame({ promptFeedback: { blockReason: 'SAFETY' } })), 'hold');
  assert.equal(policy(frame({ error: { code: 503, message: 'x', status: 'UNAVAILABLE' } })), 'last');
  assert.equal(policy(parseFrame(': keep-alive\n\n')), 'forward');
});
