// A scripted coding-agent session, as Claude Code drives one: a large system prompt and tool set sent on every
// turn, and a history that grows by an assistant tool call and a tool result per turn. Deterministic (seeded), so
// the content-store test and bench see the same bytes on every run.
import { seeded } from './seeded.js';

const WORDS =
  'the a function returns value file module test error config request response session budget ledger token agent tool call read write edit search run build check commit branch diff patch line column type string number object array null undefined import export const let async await promise stream buffer parse serialise hash digest verify chain block store cache prefix system user assistant message content model provider gateway route retry breaker limit scope key secret redact marker'.split(
    ' ',
  );

/** About `chars` characters of varied English-like text (4 characters is roughly one token). */
export function prose(seed: number, chars: number): string {
  const next = seeded(seed);
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = WORDS[Math.floor(next() * WORDS.length)] as string;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ').slice(0, chars);
}

export interface SessionShape {
  /** System prompt characters (~4 per token). */
  systemChars: number;
  /** Tool definitions: how many, and description characters each. */
  tools: number;
  toolChars: number;
  /** Characters of each tool result (a file read, a command's output). */
  resultChars: number;
}

/** Claude Code's order of magnitude: ~20k tokens of system prompt, ~10k of tools, a few KB per tool result. */
export const CODING_SESSION: SessionShape = { systemChars: 80_000, tools: 16, toolChars: 2_400, resultChars: 4_000 };

export interface CodingSession {
  system: { type: 'text'; text: string; cache_control?: { type: 'ephemeral' } }[];
  tools: { name: string; description: string; input_schema: Record<string, unknown> }[];
  /** The first user message. */
  task: string;
  /** The tool result the client sends after turn `n`'s tool call (a password pasted into turn `secretTurn`'s). */
  toolResult(n: number): string;
}

export function codingSession(
  shape: SessionShape = CODING_SESSION,
  secret?: { turn: number; text: string },
): CodingSession {
  return {
    system: [
      { type: 'text', text: prose(1, shape.systemChars - 200) },
      { type: 'text', text: `Environment: ${prose(2, 180)}`, cache_control: { type: 'ephemeral' } },
    ],
    tools: Array.from({ length: shape.tools }, (_, i) => ({
      name: `tool_${i}`,
      description: prose(100 + i, shape.toolChars - 200),
      input_schema: {
        type: 'object',
        properties: { path: { type: 'string', description: prose(200 + i, 120) }, limit: { type: 'integer' } },
        required: ['path'],
      },
    })),
    task: 'Find and fix the failing test in the budget module, then run the suite.',
    toolResult(n) {
      const body = prose(1000 + n, shape.resultChars);
      return secret !== undefined && n === secret.turn ? `${body}\n${secret.text}\n` : body;
    },
  };
}

/** The assistant's reply at turn `n`: a short remark and one tool call (Anthropic content blocks). */
export function assistantReply(n: number): { type: string; [k: string]: unknown }[] {
  return [
    { type: 'text', text: `Turn ${n}: ${prose(5000 + n, 240)}` },
    {
      type: 'tool_use',
      id: `toolu_${String(n).padStart(6, '0')}`,
      name: `tool_${n % 16}`,
      input: { path: `src/file_${n}.ts` },
    },
  ];
}

/** The messages of request `n` (0-based): the task, then per earlier turn its tool call and its result. */
export function messagesAt(session: CodingSession, n: number): { role: string; content: unknown }[] {
  const messages: { role: string; content: unknown }[] = [{ role: 'user', content: session.task }];
  for (let i = 0; i < n; i += 1) {
    messages.push({ role: 'assistant', content: assistantReply(i) });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: `toolu_${String(i).padStart(6, '0')}`, content: session.toolResult(i) },
      ],
    });
  }
  return messages;
}

/** Request `n` of the session as an Anthropic Messages body (tools, system, messages in the order providers cache them). */
export function requestAt(
  session: CodingSession,
  n: number,
): {
  model: string;
  max_tokens: number;
  tools: CodingSession['tools'];
  system: CodingSession['system'];
  messages: { role: string; content: unknown }[];
} {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 4096,
    tools: session.tools,
    system: session.system,
    messages: messagesAt(session, n),
  };
}
