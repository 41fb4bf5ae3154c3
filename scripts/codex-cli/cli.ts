// Codex CLI as the agent checks run it (scripts/lib/agent-check.ts): its install, its `config.toml` (a custom
// `model_providers` entry, `wire_api = "responses"`, pointed at the gateway) and command line for a model, and the
// call of its shell tool every Codex CLI run shares (scripts/codex-cli/run.ts, translate.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentCheck } from '../lib/agent-check.js';

export type Json = Record<string, unknown>;
export const asJson = (v: unknown): Json | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;

/** A call of the CLI's shell tool, whichever of its spellings the offered tool names hold; null when none. */
export function shellCall(names: ReadonlySet<string>): { name: string; args: Json } | null {
  if (names.has('shell')) return { name: 'shell', args: { command: ['ls'] } };
  if (names.has('shell_command')) return { name: 'shell_command', args: { command: 'ls' } };
  if (names.has('exec_command')) return { name: 'exec_command', args: { cmd: 'ls' } };
  return null;
}

/**
 * Codex CLI asking for `model` through the gateway's Responses surface: the install, the config, the command line.
 * `config` adds top-level lines to its config.toml (before the provider's table).
 */
export function codexCli(model: string, config: readonly string[] = []): Omit<AgentCheck, 'upstream' | 'check'> {
  return {
    name: 'codex-cli',
    product: 'Codex CLI',
    command: 'codex exec',
    // Its launcher picks the platform's native binary from an optional dependency (whose install scripts run).
    entry: ['node_modules', '@openai', 'codex', 'bin', 'codex.js'],
    viaNode: true,
    npmArgs: [],
    agent: 'AGENT-CODEX-CLI',
    timeoutEnv: 'CODEX_CLI_TIMEOUT_MS',
    debugEnv: 'CODEX_CLI_DEBUG',
    invocation(work, gateway) {
      const home = join(work.work, 'codex-home');
      mkdirSync(home, { recursive: true });
      writeFileSync(
        join(home, 'config.toml'),
        [
          `model = "${model}"`,
          'model_provider = "cplane"',
          ...config,
          '',
          '[model_providers.cplane]',
          'name = "cplane"',
          `base_url = "${gateway.url}/v1"`,
          'env_key = "CPLANE_KEY"',
          'wire_api = "responses"',
          'request_max_retries = 0',
          'stream_max_retries = 0',
          '',
        ].join('\n'),
      );
      return {
        args: [
          'exec',
          '--skip-git-repo-check',
          '--dangerously-bypass-approvals-and-sandbox',
          'List the files in this directory.',
        ],
        cwd: work.project,
        env: { PATH: process.env.PATH, HOME: work.work, CODEX_HOME: home, CPLANE_KEY: gateway.key, NO_COLOR: '1' },
      };
    },
  };
}
