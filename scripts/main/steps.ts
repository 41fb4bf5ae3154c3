import { spawnSync } from 'node:child_process';

export interface StepResult {
  name: string;
  ok: boolean;
  ms: number;
  detail: string;
}

export interface Captured {
  status: number;
  stdout: string;
  stderr: string;
}

/** Run a child process to completion, echoing its progress lines to stderr with a prefix. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; echo?: boolean; env?: NodeJS.ProcessEnv },
): Captured {
  const child = spawnSync(command, args, {
    cwd: options.cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: options.env ?? process.env,
  });
  const out = { status: child.status ?? 1, stdout: child.stdout ?? '', stderr: child.stderr ?? '' };
  if (options.echo) process.stderr.write(out.stderr);
  return out;
}

export async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, ms: Math.round(performance.now() - start) };
}

/** The last JSON document a command printed (commands with --json print exactly one). */
export function parseJson<T>(text: string, what: string): T {
  const start = text.indexOf('{');
  if (start < 0) throw new Error(`${what} printed no JSON: ${text.slice(0, 300)}`);
  return JSON.parse(text.slice(start)) as T;
}

/** node:test's closing summary lines (`ℹ tests 12` …). */
export function testTotals(output: string): { tests: number; passed: number; failed: number; skipped: number } {
  const read = (label: string): number => Number(new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(output)?.[1] ?? 'NaN');
  return { tests: read('tests'), passed: read('pass'), failed: read('fail'), skipped: read('skipped') + read('todo') };
}
