// Claude Code as the agent checks run it (scripts/lib/agent-check.ts): its install, command line and environment,
// and the checks of its answer every Claude Code run shares (scripts/claude-code/run.ts, fallback.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentCheck, type AgentLedger, type AgentRun, fail } from '../lib/agent-check.js';

export const KEYS = { anthropic: 'sk-ant-upstream-CHECK-0123456789', openai: 'sk-openai-upstream-CHECK-0123456789' };

/** What every Claude Code run shares: the install, the command line, the environment. */
export const CLAUDE_CODE: Omit<AgentCheck, 'upstream' | 'check'> = {
  name: 'claude-code',
  product: 'Claude Code',
  command: 'claude -p',
  entry: ['node_modules', '@anthropic-ai', `claude-code-linux-${process.arch}`, 'claude'],
  viaNode: false,
  // The postinstall only copies the native binary, which is used where it is.
  npmArgs: ['--ignore-scripts'],
  agent: 'AGENT-CLAUDE-CODE',
  timeoutEnv: 'CLAUDE_CODE_TIMEOUT_MS',
  debugEnv: 'CLAUDE_CODE_DEBUG',
  invocation(work, gateway) {
    return {
      args: [
        '-p',
        'Say hello to cplane',
        '--output-format',
        'json',
        '--model',
        'claude-sonnet-4-5',
        '--max-turns',
        '2',
        ...(process.env.CLAUDE_CODE_DEBUG ? ['--debug'] : []),
      ],
      cwd: work.work,
      env: {
        PATH: process.env.PATH,
        HOME: home(work.work),
        ANTHROPIC_BASE_URL: gateway.url,
        ANTHROPIC_API_KEY: gateway.key,
        ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
      },
    };
  },
};

/** A fresh home for Claude Code's own settings and session files. */
function home(work: string): string {
  const dir = join(work, 'home');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface ClaudeAnswer {
  result?: string;
  session_id?: string;
  is_error?: boolean;
}

/**
 * Claude Code's own checks: its JSON answer is no error, `served` upstream messages calls were each one EXCHANGE,
 * and its session is an EXCHANGE's session. The EXCHANGEs on the messages surface and the answer, for more checks.
 */
export function claudeAnswered(
  run: AgentRun,
  ledger: AgentLedger,
  served: number,
): { answer: ClaudeAnswer; messages: AgentLedger['exchanges'] } {
  const answer = JSON.parse(run.stdout) as ClaudeAnswer;
  if (answer.is_error === true) fail(`Claude Code reported an error: ${run.stdout.slice(-2000)}`);
  const messages = ledger.exchanges.filter((e) => e.metadata.surface === 'anthropic.messages');
  if (messages.length === 0 || messages.length !== served)
    fail(`${served} messages calls reached the upstream, ${messages.length} EXCHANGEs recorded them`);
  if (answer.session_id && !messages.some((e) => e.metadata.session_id === answer.session_id))
    fail(`no EXCHANGE carries Claude Code's session ${answer.session_id}`);
  return { answer, messages };
}

/** The answer and the EXCHANGEs as the PASS line says them. */
export function claudeSummary(answer: ClaudeAnswer, ledger: AgentLedger, messages: AgentLedger['exchanges']): string {
  const streamed = messages.filter((e) => e.metadata.stream === true).length;
  return (
    `${JSON.stringify(answer.result ?? '').slice(0, 120)}; ` +
    `${ledger.exchanges.length} EXCHANGEs (${messages.length} messages, streamed: ${streamed}) in session ${answer.session_id ?? '?'}`
  );
}
