import type { Argv, ArgumentsCamelCase } from 'yargs';

/** What every command handler gets: where its code lives and how to speak. No process globals. */
export interface CliContext {
  /** The HOT directory the running code was loaded from (an installed root's, or the repo's dev root). */
  hot: string;
  /** The repository checkout when run from one (repo-only commands need it), else null. */
  repo: string | null;
  /** The root to act on when --root is not given: set by a root's own entry scripts, null from the repo. */
  defaultRoot: string | null;
  env: NodeJS.ProcessEnv;
  cwd: string;
  out(text: string): void;
  err(text: string): void;
  /** Print `value` as JSON when --json was given, else `human` (a string or lines). */
  report(args: { json?: boolean | undefined }, value: unknown, human: string | readonly string[]): void;
}

/**
 * One module per command under HOT/cli/commands/: `export default defineCommand({...})`.
 * `run` returns the exit code (0 ok, 1 a check found a problem); refusals throw CpError.
 */
export interface CliCommand<A = Record<string, unknown>> {
  command: string;
  aliases?: readonly string[];
  describe: string;
  builder: (yargs: Argv) => Argv<A>;
  run: (args: ArgumentsCamelCase<A> & { json?: boolean }, ctx: CliContext) => Promise<number> | number;
  /** Nested commands (`cplane ledger append …`); when present one of them must be named and `run` is not called. */
  // biome-ignore lint/suspicious/noExplicitAny: a parent lists children whose argument types differ
  subcommands?: readonly CliCommand<any>[];
  /** Set when the module loader refused this command's module (it never ran); the CLI reports it. */
  refusal?: (Error & { code: string }) | undefined;
}

export function defineCommand<A>(command: CliCommand<A>): CliCommand<A> {
  return command;
}

/** Exit codes, documented in the README. */
export const EXIT = {
  OK: 0,
  CHECK_FAILED: 1,
  USAGE: 2,
  REFUSED: 3,
  INTERNAL: 70,
} as const;
