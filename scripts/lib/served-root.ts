// A signed root bootstrapped from the current tree and `cplane serve` started on it, for the scripts that drive the
// gateway from outside the test suite (the peer bench, the Claude Code check).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './repo.js';

export function cplaneCli(args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`cplane ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** A signed root under `work`, bootstrapped from a build of the current tree, and a route key for `agent`. */
export function bootstrapServedRoot(work: string, authSecret: string, agent: string): { root: string; key: string } {
  const keys = join(work, 'keys');
  const root = join(work, 'root');
  cplaneCli(['keys', 'generate', '--out', keys]);
  const built = JSON.parse(
    cplaneCli([
      'build',
      '--out',
      join(work, 'packages'),
      '--bootstrap-out',
      join(work, 'bootstrap'),
      '--sign-key',
      join(keys, 'cplane-signing.key'),
      '--json',
    ]),
  ) as { bootstrap: { file: string } };
  cplaneCli(['bootstrap', built.bootstrap.file, '--root', root, '--trust', join(keys, 'cplane-signing.pub')]);
  const issued = JSON.parse(
    cplaneCli(['token', 'issue', '--agent', agent, '--scope', 'route:*', '--json'], { CPLANE_AUTH_SECRET: authSecret }),
  ) as { token: string };
  return { root, key: issued.token };
}

/** Start a process and wait until `ready` finds its address in what it prints (its output is drained after). */
export function startProcess(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (output: string) => string | null,
  cwd = REPO,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start: ${output.slice(-500)}`)), 60_000);
    const onData = (d: Buffer): void => {
      output += d.toString('utf8');
      const url = ready(output);
      if (url !== null) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data').on('data', () => {});
        child.stderr?.removeAllListeners('data').on('data', () => {});
        resolve({ child, url });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited ${code}: ${output.slice(-500)}`));
    });
  });
}

/** `cplane serve` on a root (its own entry script), resolving with its URL. */
export function startServe(
  root: string,
  env: NodeJS.ProcessEnv,
  args: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  return startProcess(
    process.execPath,
    [join(root, 'HOT', 'scripts', 'cplane.js'), 'serve', '--root', root, '--port', '0', ...args],
    env,
    (o) => /listening on (http:\/\/\S+)/.exec(o)?.[1] ?? null,
  );
}

export async function stopAll(children: ChildProcess[]): Promise<void> {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())),
  );
}
