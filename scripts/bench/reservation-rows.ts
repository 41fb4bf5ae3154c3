// Issue 36's reservation rows: what an agent session reserves against what it is billed (`reservation_vs_usage`), and
// what counting a 100 KB conversation costs once its prefix is cached.
import { countTokens, encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { bodyInputBounds } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/bound.js';
import type { Budgeter } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/index.js';
import { openaiInputBound } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/tokens/openai.js';
import type { BenchRow } from './row.js';

const MAX_TOKENS = 4096;

/** An agent's tools, as an OpenAI chat body declares them. */
const TOOLS = ['read_file', 'write_file', 'run_command', 'search', 'list_dir', 'apply_patch'].map((name, i) => ({
  type: 'function',
  function: {
    name,
    description: `${name.replace('_', ' ')}: one of the workspace tools. Paths are relative to the repository root; output over 20 KB is cut.`,
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'a path inside the workspace' },
        ...(i % 2 === 0
          ? { content: { type: 'string' }, mode: { type: 'string', enum: ['text', 'json', 'diff'] } }
          : {}),
      },
      required: ['path'],
    },
  },
}));

const SYSTEM = Array.from(
  { length: 40 },
  (_, i) =>
    `${i + 1}. Read before you write; keep changes small. Run \`npm test -- --grep unit${i}\` after editing src/module${i}.ts and report failures verbatim.`,
).join('\n');

/** A tool's output: source code of a file the agent read (deterministic, about 3 KB). */
function fileText(turn: number): string {
  const lines: string[] = [];
  for (let i = 0; i < 60; i += 1)
    lines.push(`  const value${i} = compute(input.items[${(turn * 7 + i) % 97}], { depth: ${i % 5}, strict: true });`);
  return `export function handler${turn}(input: Input): Output {\n${lines.join('\n')}\n  return { ok: true };\n}\n`;
}

type ChatMessage = Record<string, unknown> & { role: string };

/** The session's chat messages after `turns` tool round-trips. */
function conversation(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'The build fails in src/handlers: find why and fix it, then run the tests.' },
  ];
  for (let t = 0; t < turns; t += 1) {
    const args = JSON.stringify({ path: `src/handlers/h${t}.ts` });
    messages.push({
      role: 'assistant',
      content: t % 3 === 0 ? `Reading handler ${t} to check how it calls compute().` : null,
      tool_calls: [{ id: `call_${t}`, type: 'function', function: { name: 'read_file', arguments: args } }],
    });
    messages.push({ role: 'tool', tool_call_id: `call_${t}`, content: fileText(t) });
  }
  return messages;
}

/** What an upstream counting with OpenAI's tokenizer bills: every message's text (tool calls by their JSON), the tools. */
function billedInput(messages: ChatMessage[]): number {
  const chat = messages.map((m) => ({
    role: m.role,
    content: `${typeof m.content === 'string' ? m.content : ''}${m.tool_calls === undefined ? '' : JSON.stringify(m.tool_calls)}`,
  }));
  return encodeChat(chat, 'gpt-4o').length + countTokens(JSON.stringify(TOOLS));
}

/** The same conversation as an Anthropic Messages body (tool_use and tool_result blocks). */
function anthropicBody(messages: ChatMessage[]): Record<string, unknown> {
  const out: Record<string, unknown>[] = [];
  for (const m of messages.slice(1)) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'assistant') {
      const call = (m.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>)[0];
      const text = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : [];
      out.push({
        role: 'assistant',
        content: [
          ...text,
          {
            type: 'tool_use',
            id: call?.id,
            name: call?.function.name,
            input: JSON.parse(call?.function.arguments ?? '{}'),
          },
        ],
      });
    } else
      out.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }] });
  }
  const tools = TOOLS.map((t) => ({
    name: t.function.name,
    description: t.function.description,
    input_schema: t.function.parameters,
  }));
  return { model: 'claude-sonnet-4-5', max_tokens: MAX_TOKENS, system: SYSTEM, tools, messages: out };
}

interface Totals {
  reservedTokens: number;
  usedTokens: number;
  reservedCost: number;
  cost: number;
}

function cycle(
  budgeter: Budgeter,
  totals: Totals,
  id: string,
  model: string,
  input: number,
  usage: { in: number; out: number },
): void {
  budgeter.reserve({
    request_id: id,
    session_id: 'S-agent',
    model,
    estimated_input_tokens: input,
    max_output_tokens: MAX_TOKENS,
  });
  const settled = budgeter.settle({ request_id: id, usage: { input_tokens: usage.in, output_tokens: usage.out } });
  budgeter.recorded([id]);
  totals.reservedTokens += settled.reservation.reserved_tokens;
  totals.usedTokens += settled.reservation.actual_tokens ?? Number.NaN;
  totals.reservedCost += settled.reservation.reserved_cost ?? Number.NaN;
  totals.cost += settled.reservation.cost ?? Number.NaN;
}

const zero = (): Totals => ({ reservedTokens: 0, usedTokens: 0, reservedCost: 0, cost: 0 });

/**
 * An agent session of `turns` calls, each resending the whole conversation with one more tool round-trip: reserved as
 * the gateway reserves it (the smaller of the byte bound and the tokenizer's count for gpt-4.1; the byte bound for
 * Claude), settled with the usage an upstream counting with o200k reports (no cache hits: a reservation cannot know
 * them). Claude's tokenizer is not published, so its row's usage is o200k's count too: a stand-in, reported only.
 */
export async function reservationRows(
  budgeter: Budgeter,
  turns: number,
  log: (line: string) => void,
): Promise<BenchRow[]> {
  const openai = zero();
  const anthropic = zero();
  for (let t = 0; t < turns; t += 1) {
    const messages = conversation(t);
    const body = { model: 'gpt-4.1', max_tokens: MAX_TOKENS, messages, tools: TOOLS };
    const counted = await openaiInputBound(body, 'gpt-4.1', 'openai.chat');
    const input = Math.min(bodyInputBounds(body).bound, counted ?? Number.POSITIVE_INFINITY);
    const output = countTokens(JSON.stringify(conversation(t + 1).at(-2))) + 20;
    const usage = { in: billedInput(messages), out: output };
    cycle(budgeter, openai, `O-${t}`, 'gpt-4.1', input, usage);
    cycle(budgeter, anthropic, `A-${t}`, 'claude-sonnet-4-5', bodyInputBounds(anthropicBody(messages)).bound, usage);
  }
  const tokens = openai.reservedTokens / openai.usedTokens;
  const cost = openai.reservedCost / openai.cost;
  const byteTokens = anthropic.reservedTokens / anthropic.usedTokens;
  const byteCost = anthropic.reservedCost / anthropic.cost;
  log(
    `reservation_vs_usage: ${turns} turns, gpt-4.1 reserved/used tokens ${tokens.toFixed(3)} (cost ${cost.toFixed(3)}); claude by the byte bound ${byteTokens.toFixed(3)} (cost ${byteCost.toFixed(3)})`,
  );
  // Tokens are what a budget's max_tokens counts and what the tokenizer tightens. The cost ratio also carries the
  // whole output allowance (max_tokens, priced at four times the input) that no count of the input can shrink.
  return [
    {
      name: 'reservation_vs_usage',
      value: tokens,
      unit: 'x',
      baseline: byteTokens,
      ratio: tokens / byteTokens,
      target: '<= 1.5',
      ok: tokens <= 1.5,
    },
    {
      name: 'reservation_vs_usage_cost',
      value: cost,
      unit: 'x',
      baseline: byteCost,
      ratio: cost / byteCost,
      target: 'reported',
      ok: null,
    },
    {
      name: 'reservation_vs_usage_byte_bound',
      value: byteTokens,
      unit: 'x',
      baseline: null,
      ratio: null,
      target: 'reported',
      ok: null,
    },
  ];
}

/**
 * Counting a turn of a 100 KB conversation whose earlier messages were counted on the turn before (cached per text),
 * against counting it cold: what an agent's next turn costs the gateway's admission.
 */
export async function countingRows(log: (line: string) => void): Promise<BenchRow[]> {
  let turns = 1;
  while (Buffer.byteLength(JSON.stringify(conversation(turns))) < 100_000) turns += 1;
  const warm = { model: 'gpt-4.1', messages: conversation(turns - 1), tools: TOOLS };
  const next = { model: 'gpt-4.1', messages: conversation(turns), tools: TOOLS };
  await openaiInputBound({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'load' }] }, 'gpt-4.1', 'openai.chat');
  // Cold: a conversation no call sent before (a fresh salt in every message), counted whole.
  const salted = { ...next, messages: next.messages.map((m) => ({ ...m, content: `${String(m.content)} ~cold~` })) };
  let start = performance.now();
  await openaiInputBound(salted, 'gpt-4.1', 'openai.chat');
  const cold = performance.now() - start;
  await openaiInputBound(warm, 'gpt-4.1', 'openai.chat');
  start = performance.now();
  await openaiInputBound(next, 'gpt-4.1', 'openai.chat');
  const cached = performance.now() - start;
  const bytes = Buffer.byteLength(JSON.stringify(next));
  log(
    `counting a ${(bytes / 1024).toFixed(0)} KB conversation: cold ${cold.toFixed(1)} ms, next turn with its prefix cached ${cached.toFixed(2)} ms`,
  );
  return [
    {
      name: 'reservation_count_100kb_turn',
      value: cached,
      unit: 'ms',
      baseline: cold,
      ratio: cached / cold,
      target: 'ratio <= 0.1',
      ok: cached / cold <= 0.1,
    },
  ];
}
