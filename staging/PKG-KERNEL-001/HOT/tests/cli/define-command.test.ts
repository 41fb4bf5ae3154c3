import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineCommand, EXIT, exitCodeOf } from '../../cli/command.js';
import { runCli } from '../../cli/main.js';

/**
 * Compiled, never run: the build fails when a handler's argument types stop following the option specs
 * (an unused @ts-expect-error is an error), so a regression to `any` cannot pass unnoticed.
 */
export const typed = defineCommand({
  name: 'typed',
  describe: 'argument types inferred from the specs',
  positionals: { file: { type: 'string', demandOption: true }, extra: { type: 'string' } },
  options: {
    name: { type: 'string', demandOption: true },
    color: { type: 'string', choices: ['red', 'green'] },
    'max-count': { type: 'number', default: 3 },
    tag: { type: 'string', array: true },
    force: { type: 'boolean' },
  },
  handler(args) {
    const name: string = args.name;
    const color: 'red' | 'green' | undefined = args.color;
    const max: number = args.maxCount;
    const tags: string[] | undefined = args.tag;
    const file: string = args.file;
    // @ts-expect-error an optional positional may be absent
    const extra: string = args.extra;
    // @ts-expect-error choices narrow the type to the listed values
    const red: 'red' = args.color;
    // @ts-expect-error an option without a default may be absent
    const force: boolean = args.force;
    // @ts-expect-error an option that was never declared has no type to rely on
    const colour: string = args.colour;
    void [name, color, max, tags, file, extra, red, force, colour];
    return EXIT.OK;
  },
});

export const untyped = defineCommand({
  name: 'untyped',
  describe: 'a handler returns an EXIT constant, not any number',
  // @ts-expect-error 5 is no exit code of the table in docs/codes.md
  handler: () => 5,
});

async function withProbe(body: string, argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'cp-define-command-'));
  try {
    const command = new URL('../../cli/command.js', import.meta.url).href;
    const errors = new URL('../../kernel/errors.js', import.meta.url).href;
    writeFileSync(
      join(dir, 'probe.js'),
      `import { defineCommand, defineGroup, EXIT } from '${command}';\nimport { CpError } from '${errors}';\n${body}\n`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli({
      argv,
      extraCommandDirs: [dir],
      stdout: (s) => {
        out.push(s);
      },
      stderr: (s) => {
        err.push(s);
      },
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PROBE = `
const copy = defineCommand({
  name: 'copy',
  describe: 'copy',
  positionals: { from: { type: 'string', demandOption: true }, to: { type: 'string' } },
  options: { mode: { type: 'string', choices: ['fast', 'safe'], default: 'safe' }, count: { type: 'number' } },
  check(args) {
    if (args.from === 'nowhere') throw new CpError('ERR_USAGE', 'check ran: ' + args.from, { hint: 'h' });
  },
  handler(args, ctx) {
    ctx.report(args, { from: args.from, to: args.to ?? null, mode: args.mode }, 'copied ' + args.from);
    return args.from === 'broken' ? EXIT.CHECK_FAILED : EXIT.OK;
  },
});
const list = defineCommand({
  name: 'list',
  describe: 'list',
  options: { all: { type: 'boolean' } },
  handler: (args, ctx) => { ctx.out('listed'); return EXIT.OK; },
});
export default defineGroup({ name: 'probe', describe: 'a probe group', subcommands: [copy, list] });
`;

test('a defined command parses its positionals and options as declared, and its handler sets the exit code', async () => {
  const ok = await withProbe(PROBE, ['probe', 'copy', 'a', 'b', '--mode', 'fast', '--json']);
  assert.equal(ok.code, EXIT.OK, ok.err);
  assert.deepEqual(JSON.parse(ok.out), { from: 'a', to: 'b', mode: 'fast' });
  const defaulted = await withProbe(PROBE, ['probe', 'copy', 'a', '--json']);
  assert.deepEqual(JSON.parse(defaulted.out), { from: 'a', to: null, mode: 'safe' });
  const failed = await withProbe(PROBE, ['probe', 'copy', 'broken']);
  assert.equal(failed.code, EXIT.CHECK_FAILED);
  assert.equal(failed.out, 'copied broken');
  const help = await withProbe(PROBE, ['probe', '--help']);
  assert.match(help.out, /probe copy <from> \[to\]/, 'the command string is built from the positionals');
});

test('what a definition declares is enforced before its handler runs: usage errors exit 2 and run nothing', async () => {
  const refused: string[][] = [
    ['probe'], // a group needs a subcommand
    ['probe', 'move', 'a'], // an unknown subcommand
    ['probe', 'copy'], // a demanded positional is missing
    ['probe', 'copy', 'a', '--mode', 'slow'], // not one of the choices
    ['probe', 'copy', 'a', '--count', 'many'], // a number option given no number
    ['probe', 'copy', 'a', '--mode'], // a string option given no value
    ['probe', 'copy', 'a', '--all'], // a sibling's option is not this subcommand's
    ['probe', 'list', 'a'], // a subcommand without positionals takes none
  ];
  for (const argv of refused) {
    const result = await withProbe(PROBE, argv);
    assert.equal(result.code, EXIT.USAGE, `${argv.join(' ')}: ${result.err}`);
    assert.match(result.err, /ERR_USAGE/, argv.join(' '));
    assert.doesNotMatch(result.out, /copied|listed/, `${argv.join(' ')} ran the handler`);
  }
  const checked = await withProbe(PROBE, ['probe', 'copy', 'nowhere']);
  assert.equal(checked.code, EXIT.USAGE, "the definition's own check refuses");
  assert.match(checked.err, /ERR_USAGE: check ran: nowhere/);
  assert.doesNotMatch(checked.out, /copied/);
});

test("one action's options are refused by the others: `keys list --force`, `dispatch status --tasks`", async () => {
  for (const argv of [
    ['keys', 'list', '--force'],
    ['keys', 'generate', 'extra.pub'],
    ['keys', 'trust'],
    ['dispatch', 'status', '--run', 'r', '--tasks', 'tasks.md'],
    ['dispatch', 'compile', '--run', 'r', '--task', '1'],
    ['budget', 'status', '--spec', 'x.json'],
    ['prompt', 'compile', '--spec', 'x.json', '--limit', '3'],
  ]) {
    const err: string[] = [];
    const code = await runCli({ argv, stdout: () => {}, stderr: (s) => err.push(s) });
    assert.equal(code, EXIT.USAGE, `${argv.join(' ')}: ${err.join('')}`);
    assert.match(err.join(''), /ERR_USAGE/);
  }
});

test("a child cplane's exit status maps onto EXIT: its own codes pass through, a signal or a foreign status does not", () => {
  for (const code of Object.values(EXIT)) assert.equal(exitCodeOf(code), code);
  assert.equal(exitCodeOf(null), EXIT.CHECK_FAILED, 'killed by a signal: the check did not pass');
  assert.equal(exitCodeOf(134), EXIT.INTERNAL, 'an abort is no exit code cplane uses: a bug');
  assert.equal(exitCodeOf(-1), EXIT.INTERNAL);
});
