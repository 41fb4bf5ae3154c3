// Anthropic input counts by count_tokens for reservations: counted once per conversation, reserved with a margin,
// a failed or slow count falling back to the longest counted prefix and the bytes of the rest, else the byte bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyInputBounds } from '#budgeter/bound.js';
import {
  AnthropicCounts,
  anthropicCountsOption,
  COUNT_MARGIN_FRACTION,
  COUNT_MARGIN_TOKENS,
  type CountCall,
  withMargin,
} from '../../gateway/anthropic-count.js';

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
  const counts = new AnthropicCounts(1000);
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
  const counts = new AnthropicCounts(1000);
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
  assert.equal(await new AnthropicCounts(1000).inputBound(next, failing.call), null);
});

test('a count slower than the timeout is given up: the call is not held past it', async () => {
  const counts = new AnthropicCounts(50);
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
  const counts = new AnthropicCounts(1000);
  assert.equal(await counts.inputBound(turn(1), counter(async () => -1).call), null);
  assert.equal(await counts.inputBound(turn(1), counter(async () => Number.NaN).call), null);
  assert.deepEqual(anthropicCountsOption(undefined), {});
  assert.deepEqual(anthropicCountsOption({ anthropic: false }), {});
  assert.equal(anthropicCountsOption({ anthropic: true, timeout_ms: 300 }).anthropicCounts?.timeoutMs, 300);
});
