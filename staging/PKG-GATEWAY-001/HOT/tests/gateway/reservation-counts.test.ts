// Anthropic input counts by count_tokens for reservations: counted once per conversation, reserved with a margin,
// a failed or slow count falling back to the longest counted prefix and the bytes of the rest, else the byte bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyInputBounds } from '#budgeter/bound.js';
import {
  ANTHROPIC_COUNT,
  GEMINI_COUNT,
  InputCounts,
  inputCountsOption,
  COUNT_MARGIN_FRACTION,
  COUNT_MARGIN_TOKENS,
  type CountCall,
  withMargin,
} from '../../gateway/input-counts.js';

const SYSTEM = 'You are a coding agent. Read before you write.';
const turn = (n: number) => {
  const messages: Array<{ role: string; content: string }> = [];
  for (let i = 0; i < n; i += 1) {
    messages.push({ role: 'user', content: `step ${i}: ${'read src/a.ts and fix it; '.repeat(40)}` });
    messages.push({ role: 'assistant', content: `done ${i}` });
  }
  messages.push({ role: 'user', content: 'next' });
  return { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, system: SYSTEM, messages };
};

/** A count_tokens stand-in: the body's characters over four, each body it was asked for kept. */
function counter(answer: (body: Record<string, unknown>, signal: AbortSignal) => Promise<number>) {
  const asked: Record<string, unknown>[] = [];
  const call: CountCall = (body, signal) => {
    asked.push(body);
    return answer(body, signal);
  };
  return { asked, call };
}
const quarter = async (body: Record<string, unknown>) => Math.ceil(JSON.stringify(body).length / 4);

test('a count is reserved with its margin, asked with only the fields count_tokens takes, and asked once', async () => {
  const counts = new InputCounts(1000, ANTHROPIC_COUNT);
  const { asked, call } = counter(quarter);
  const body = turn(3);
  const bound = await counts.inputBound(body, call);
  assert.equal(asked.length, 1);
  assert.deepEqual(Object.keys(asked[0] ?? {}).sort(), ['messages', 'model', 'system']);
  const counted = await quarter(asked[0] as Record<string, unknown>);
  assert.equal(bound, Math.ceil(counted * (1 + COUNT_MARGIN_FRACTION)) + COUNT_MARGIN_TOKENS);
  assert.ok((bound as number) < bodyInputBounds(body).bound, 'tighter than the byte bound');
  assert.equal(await counts.inputBound({ ...body, temperature: 0.2 }, call), bound, 'the same conversation: cached');
  assert.equal(asked.length, 1);
});

test('a failed count falls back to the longest counted prefix plus the bytes of the messages after it', async () => {
  const counts = new InputCounts(1000, ANTHROPIC_COUNT);
  const first = turn(2);
  await counts.inputBound(first, counter(async () => 500).call);
  // The agent's next turn: the same conversation, the reply and a tool result added.
  const added = [
    { role: 'assistant', content: 'I will read src/b.ts next.' },
    { role: 'user', content: `tool result: ${'export const b = 1;\n'.repeat(200)}` },
  ];
  const next = { ...first, messages: [...first.messages, ...added] };
  const failing = counter(async () => {
    throw new Error('529 overloaded');
  });
  const bound = await counts.inputBound(next, failing.call);
  assert.equal(failing.asked.length, 1);
  const rest = bodyInputBounds({ messages: next.messages.slice(first.messages.length) }).bound;
  assert.equal(bound, withMargin(500) + rest);
  // A conversation with nothing counted before it: no bound here, the caller keeps the byte bound.
  assert.equal(await new InputCounts(1000, ANTHROPIC_COUNT).inputBound(next, failing.call), null);
});

test('a count slower than the timeout is given up: the call is not held past it', async () => {
  const counts = new InputCounts(50, ANTHROPIC_COUNT);
  const slow = counter(
    (_body, signal) =>
      new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => resolve(10), 5000);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      }),
  );
  // The count would answer 10 after 5 s: null means it was given up at its timeout, not awaited.
  assert.equal(await counts.inputBound(turn(1), slow.call), null);
});

test('an answer that is not a count is no count; the option is off unless switched on', async () => {
  const counts = new InputCounts(1000, ANTHROPIC_COUNT);
  assert.equal(await counts.inputBound(turn(1), counter(async () => -1).call), null);
  assert.equal(await counts.inputBound(turn(1), counter(async () => Number.NaN).call), null);
  assert.deepEqual(inputCountsOption(undefined), {});
  assert.deepEqual(inputCountsOption({ anthropic: false, gemini: false }), {});
  const on = inputCountsOption({ anthropic: true, timeout_ms: 300 }).inputCounts;
  assert.equal(on?.anthropic?.timeoutMs, 300);
  assert.equal(on?.gemini, undefined);
});

test('Gemini: the whole generateContent request is counted (its system and tools too), its model named as countTokens wants', async () => {
  const counts = new InputCounts(1000, GEMINI_COUNT);
  const { asked, call } = counter(async () => 40);
  const body = {
    systemInstruction: { parts: [{ text: SYSTEM }] },
    tools: [{ functionDeclarations: [{ name: 'read', parameters: { type: 'OBJECT', properties: {} } }] }],
    generationConfig: { maxOutputTokens: 256 },
    contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
  };
  assert.equal(await counts.inputBound(body, call, 'models/gemini-2.5-flash'), withMargin(40));
  assert.deepEqual(asked[0], {
    generateContentRequest: {
      model: 'models/gemini-2.5-flash',
      systemInstruction: body.systemInstruction,
      tools: body.tools,
      contents: body.contents,
    },
  });
  // The next turn, its count refused: the counted prefix and the rest by its bytes; a video part is not bounded so.
  const failing = counter(async () => {
    throw new Error('429');
  }).call;
  const reply = { role: 'model', parts: [{ text: 'hi' }] };
  const next = { ...body, contents: [...body.contents, reply] };
  const bound = await counts.inputBound(next, failing, 'models/gemini-2.5-flash');
  assert.ok(bound !== null && bound > withMargin(40) && bound < withMargin(40) + 200, String(bound));
  const video = { role: 'user', parts: [{ fileData: { mimeType: 'video/mp4', fileUri: 'gs://b/v.mp4' } }] };
  assert.equal(
    await counts.inputBound({ ...body, contents: [...body.contents, video] }, failing, 'models/gemini-2.5-flash'),
    null,
  );
});
