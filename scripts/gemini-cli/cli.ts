// Gemini CLI as the agent checks run it (scripts/lib/agent-check.ts): its install, command line and environment for
// a model, and the reading of its JSON answer every Gemini CLI run shares (scripts/gemini-cli/run.ts, translate.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentCheck, type AgentRun, fail } from '../lib/agent-check.js';

export type Json = Record<string, unknown>;
export const asJson = (v: unknown): Json | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;

/** Gemini CLI asking for `model`, with these `modelConfigs` settings: the install, the command line, the environment. */
export function geminiCli(model: string, modelConfigs?: Json): Omit<AgentCheck, 'upstream' | 'check'> {
  return {
    name: 'gemini-cli',
    product: 'Gemini CLI',
    command: 'gemini -p',
    // The CLI's bundle (its optional native helpers, for terminals and keychains, are not needed).
    entry: ['node_modules', '@google', 'gemini-cli', 'bundle', 'gemini.js'],
    viaNode: true,
    npmArgs: ['--ignore-scripts'],
    agent: 'AGENT-GEMINI-CLI',
    timeoutEnv: 'GEMINI_CLI_TIMEOUT_MS',
    debugEnv: 'GEMINI_CLI_DEBUG',
    invocation(work, gateway) {
      const home = join(work.work, 'home');
      // API-key auth chosen in the user's settings (with a base URL set, the CLI would otherwise pick its `gateway`
      // auth type, which headless mode refuses); no usage statistics or update checks leave the machine.
      mkdirSync(join(home, '.gemini'), { recursive: true });
      writeFileSync(
        join(home, '.gemini', 'settings.json'),
        JSON.stringify({
          security: { auth: { selectedType: 'gemini-api-key' } },
          privacy: { usageStatisticsEnabled: false },
          general: { disableAutoUpdate: true, disableUpdateNag: true },
          ...(modelConfigs === undefined ? {} : { modelConfigs }),
        }),
      );
      return {
        args: [
          '-p',
          'List the files in this directory.',
          '--model',
          model,
          '--output-format',
          'json',
          '--approval-mode',
          'yolo',
          ...(process.env.GEMINI_CLI_DEBUG ? ['--debug'] : []),
        ],
        cwd: work.project,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          GOOGLE_GEMINI_BASE_URL: gateway.url,
          GEMINI_API_KEY: gateway.key,
          // Headless, the CLI runs tools only in a trusted folder.
          GEMINI_CLI_TRUST_WORKSPACE: 'true',
          GEMINI_CLI_NO_RELAUNCH: 'true',
          NO_BROWSER: 'true',
          CI: '1',
        },
      };
    },
  };
}

/** The CLI's JSON answer: no error, and it holds `expected`. The answer's text. */
export function cliAnswered(run: AgentRun, expected: string): string {
  const answer = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { response?: string; error?: unknown };
  if (answer.error !== undefined && answer.error !== null)
    fail(`Gemini CLI reported an error: ${run.stdout.slice(-2000)}`);
  if (!String(answer.response ?? '').includes(expected))
    fail(`the answer is not the upstream's: ${run.stdout.slice(-2000)}`);
  return String(answer.response ?? '');
}
