import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs, { type Argv } from 'yargs';
import { Parser } from 'yargs/helpers';
import { CpError, isCpError } from '../kernel/errors.js';
import { exitCodeOf, lookUpCode } from '../kernel/catalogue/load.js';
import { envError } from '../kernel/env-errors.js';
import { contributionsIn, importContribution } from '../kernel/loader/discover.js';
import { isModuleRefusal, linkedFiles } from '../kernel/loader/register.js';
import { EXIT, type CliCommand, type CliContext, type ExitCode } from './command.js';

export interface RunCliOptions {
  argv: readonly string[];
  /** Extra command directories (the repository's build/bootstrap/bench commands). */
  extraCommandDirs?: readonly string[];
  repo?: string | null;
  defaultRoot?: string | null;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Fixed arguments prepended to argv (root entry scripts use this, e.g. ['gate-check']). */
  prefix?: readonly string[];
}

const HOT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Load every command module in a directory, in name order, so each package brings its own commands. A module
 * the loader refuses (unowned, or changed) is never imported: it becomes an unavailable command naming it.
 */
export async function loadCommands(dir: string): Promise<CliCommand[]> {
  const out: CliCommand[] = [];
  for (const found of contributionsIn(dir)) {
    if (found.refusal !== undefined) {
      out.push(unavailableCommand(found.name, found.path, found.refusal));
      continue;
    }
    try {
      const mod = (await importContribution(found)) as { default?: CliCommand };
      if (mod.default && typeof mod.default.register === 'function') out.push(mod.default);
    } catch (error) {
      out.push(unavailableCommand(found.name, found.path, error));
    }
  }
  return out;
}

/**
 * A command whose module cannot be imported (a package file missing or damaged) must not take the whole
 * CLI down with it — gate-check and verify are how a user finds out what broke.
 */
function unavailableCommand(name: string, path: string, error: unknown): CliCommand {
  const reason = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
  const command = `${name} [args..]`;
  const describe = `(unavailable: ${reason})`;
  return {
    name,
    command,
    describe,
    refusal: isModuleRefusal(error) ? error : undefined,
    register: (y) =>
      y.command({
        command,
        describe,
        builder: (sub: Argv) => sub.strict(false),
        handler: () => {
          if (isModuleRefusal(error)) throw error;
          throw new CpError('ERR_COMMAND_UNAVAILABLE', `command ${JSON.stringify(name)} cannot be loaded: ${reason}`, {
            hint: 'a package file is missing or damaged: run `cplane gate-check` on this root and reinstall the package that owns it',
            details: { module: path },
          });
        },
      }),
  };
}

/**
 * Lines to the process's stdout. A reader that stops early (`cplane ledger export | head`) closes the pipe: the
 * rest of the output has nowhere to go, which is no error, where an unhandled EPIPE would crash with a stack.
 */
function stdoutWriter(): (text: string) => void {
  // One listener per process, however many times the CLI runs in it.
  if (stdoutState.listening === false) {
    stdoutState.listening = true;
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      stdoutState.gone = true;
    });
  }
  return (text) => {
    if (!stdoutState.gone) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  };
}

const stdoutState = { listening: false, gone: false };

/** Run the cplane CLI against the code in this HOT tree. Returns the exit code; never exits the process. */
export async function runCli(options: RunCliOptions): Promise<ExitCode> {
  const out = options.stdout ?? stdoutWriter();
  const err =
    options.stderr ??
    ((text: string) => {
      process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
    });
  const argv = [...(options.prefix ?? []), ...options.argv];
  // Read as yargs reads the option (`--json=true`, `--json --no-json`, a `--json` after `--`), so an error is JSON
  // exactly when the command's own output would have been.
  const wantsJson = Parser(argv, { boolean: ['json'] }).json === true;
  const ctx: CliContext = {
    hot: HOT_DIR,
    repo: options.repo ?? null,
    defaultRoot: options.defaultRoot ?? null,
    env: options.env ?? process.env,
    cwd: options.cwd ?? process.cwd(),
    out,
    err,
    report(args, value, human) {
      if (args.json) out(JSON.stringify(value, null, 2));
      else out(typeof human === 'string' ? human : human.join('\n'));
    },
  };

  const byName = new Map<string, CliCommand>();
  for (const dir of [join(HOT_DIR, 'cli', 'commands'), ...(options.extraCommandDirs ?? [])]) {
    for (const cmd of await loadCommands(dir)) {
      byName.set(cmd.name, cmd);
      if (cmd.refusal)
        err(`cplane: warning: ${cmd.refusal.code}: ${cmd.refusal.message} (command ${cmd.name} skipped)`);
    }
  }
  for (const link of linkedFiles()) err(`cplane: warning: ${link.code}: ${link.message}`);

  let exitCode: ExitCode = EXIT.OK;
  let cli: Argv = yargs([...argv])
    .scriptName('cplane')
    .strict()
    .demandCommand(1, 'name a command (see cplane --help)')
    .recommendCommands()
    .option('json', { type: 'boolean', describe: 'print machine-readable JSON' })
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .exitProcess(false)
    .showHelpOnFail(false)
    .fail((message: string | undefined, error: Error | undefined) => {
      // yargs' own parse errors (YError: a missing option value) are usage errors; anything else propagates.
      if (error && error.name !== 'YError') throw error;
      throw new CpError('ERR_USAGE', message ?? error?.message ?? 'invalid arguments', {
        hint: 'run the command with --help to see its options',
      });
    })
    .epilogue('Exit codes: 0 ok, 1 a check failed, 2 usage error, 3 refused (coded error), 70 internal error.');
  for (const cmd of [...byName.values()].sort((a, b) => a.command.localeCompare(b.command))) {
    cli = cmd.register(cli, ctx, (code) => {
      exitCode = code;
    });
  }
  try {
    let helpText = '';
    await cli.parseAsync([...argv], {}, (_e: unknown, _argv: unknown, output: string) => {
      helpText = output;
    });
    if (helpText) out(helpText);
    return exitCode;
  } catch (error) {
    return await reportError(error, wantsJson, out, err);
  }
}

async function reportError(
  thrown: unknown,
  json: boolean,
  out: (t: string) => void,
  err: (t: string) => void,
): Promise<ExitCode> {
  // Last resort: a full disk or a damaged database that no call site mapped is still not a bug.
  const coded = isCpError(thrown) && thrown.code !== 'ERR_INTERNAL' ? thrown : (envError(thrown) ?? thrown);
  if (isCpError(coded)) {
    // The catalogue says the exit code, and the hint when the code that raised it gave none.
    const entry = await lookUpCode(HOT_DIR, coded.code);
    const hint = coded.hint || entry?.hint || '';
    const error = { code: coded.code, message: coded.message, hint, details: coded.details ?? {} };
    if (json) out(JSON.stringify({ error }, null, 2));
    else err(`cplane: ${error.code}: ${error.message}${error.hint ? `\n  hint: ${error.hint}` : ''}`);
    return exitCodeOf(entry) as ExitCode;
  }
  const message = coded instanceof Error ? (coded.stack ?? coded.message) : String(coded);
  if (json)
    out(
      JSON.stringify(
        { error: { code: 'ERR_INTERNAL', message: String(coded), hint: 'this is a bug in cplane; please report it' } },
        null,
        2,
      ),
    );
  else err(`cplane: ERR_INTERNAL: ${message}\n  hint: this is a bug in cplane; please report it`);
  return EXIT.INTERNAL;
}
