import type { ArgumentsCamelCase, Argv, InferredOptionTypes, Options, PositionalOptions } from 'yargs';
import { requireOptionValues } from './option-values.js';

/** Exit codes, the "Exit codes" table of docs/codes.md: every handler returns one of these. */
export const EXIT = {
  OK: 0,
  CHECK_FAILED: 1,
  USAGE: 2,
  REFUSED: 3,
  INTERNAL: 70,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A child cplane's exit status as ours: killed by a signal is a failed check, a status we never use a bug. */
export function exitCodeOf(status: number | null): ExitCode {
  if (status === null) return EXIT.CHECK_FAILED;
  return Object.values(EXIT).find((code) => code === status) ?? EXIT.INTERNAL;
}

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

/** Options by name, as yargs' `.option(name, spec)` takes them, in the order `--help` lists them. */
export type OptionSpecs = Readonly<Record<string, Options>>;
/** Positionals by name, in the order they follow the command's name. */
export type PositionalSpecs = Readonly<Record<string, PositionalOptions>>;
/** A command declaring no options or no positionals. */
type NoSpecs = Record<never, never>;

/**
 * A handler's arguments, inferred from its definition: each option's type follows its spec (`type`, `array`,
 * `choices`; `demandOption` or a `default` make it always present), under its dashed and camelCase names.
 */
export type HandlerArgs<O extends OptionSpecs, P extends PositionalSpecs = NoSpecs> = ArgumentsCamelCase<
  InferredOptionTypes<O> & InferredOptionTypes<P>
> & { json?: boolean | undefined };

export interface CommandDefinition<O extends OptionSpecs, P extends PositionalSpecs> {
  /** The command's name; its positionals are appended (`<name>` when demanded, else `[name]`). */
  name: string;
  aliases?: readonly string[];
  describe: string;
  positionals?: P;
  options?: O;
  /** Cross-option rules yargs cannot state (exactly one of two options): throw CpError('ERR_USAGE') to refuse. */
  check?: (args: HandlerArgs<O, P>) => void;
  examples?: readonly (readonly [command: string, description: string])[];
  /** Runs the command: a check that finds a problem returns EXIT.CHECK_FAILED; refusals throw CpError. */
  handler: (args: HandlerArgs<O, P>, ctx: CliContext) => ExitCode | Promise<ExitCode>;
}

/**
 * A command ready to join the CLI: its argument types are sealed inside `register`, so a list of commands
 * (the CLI's, a group's subcommands) needs no type parameter.
 */
export interface CliCommand {
  readonly name: string;
  /** The yargs command string (`install <archive>`). */
  readonly command: string;
  readonly describe: string;
  /** Set when the module loader refused this command's module (it never ran); the CLI reports it. */
  readonly refusal?: (Error & { code: string }) | undefined;
  register(y: Argv, ctx: CliContext, setExit: (code: ExitCode) => void): Argv;
}

/**
 * One command, one module: `export default defineCommand({...})` in a package's HOT/cli/commands/ (a
 * top-level command) or in the folder of the group it belongs to (HOT/cli/ledger/ for `ledger …`).
 */
export function defineCommand<const O extends OptionSpecs = NoSpecs, const P extends PositionalSpecs = NoSpecs>(
  definition: CommandDefinition<O, P>,
): CliCommand {
  const positionals = Object.entries(definition.positionals ?? {});
  const command = [
    definition.name,
    ...positionals.map(([name, spec]) => (spec.demandOption ? `<${name}>` : `[${name}]`)),
  ].join(' ');
  return {
    name: definition.name,
    command,
    describe: definition.describe,
    register: (y, ctx, setExit) =>
      y.command({
        command,
        aliases: [...(definition.aliases ?? [])],
        describe: definition.describe,
        builder: (sub: Argv) => {
          let built = sub;
          for (const [name, spec] of positionals) built = built.positional(name, spec);
          for (const [name, spec] of Object.entries(definition.options ?? {})) built = built.option(name, spec);
          for (const [example, description] of definition.examples ?? []) built = built.example(example, description);
          const check = definition.check;
          if (check)
            built = built.check((args) => {
              check(args as HandlerArgs<O, P>);
              return true;
            });
          return requireOptionValues(built);
        },
        handler: async (args) => {
          // yargs parsed `args` against exactly the specs HandlerArgs is inferred from (strict, demanded, choices).
          setExit(await definition.handler(args as HandlerArgs<O, P>, ctx));
        },
      }),
  };
}

/** A command that only groups subcommands (`cplane ledger append …`): one of them must be named. */
export function defineGroup(group: { name: string; describe: string; subcommands: readonly CliCommand[] }): CliCommand {
  return {
    name: group.name,
    command: group.name,
    describe: group.describe,
    register: (y, ctx, setExit) =>
      y.command({
        command: group.name,
        describe: group.describe,
        builder: (sub: Argv) => {
          let built = sub;
          for (const command of group.subcommands) built = command.register(built, ctx, setExit);
          return built.demandCommand(1, `name a ${group.name} subcommand (see --help)`);
        },
        // Unreachable: yargs demands a subcommand, and the subcommand's own handler runs.
        handler: () => setExit(EXIT.USAGE),
      }),
  };
}
