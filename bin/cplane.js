#!/usr/bin/env node
// Repository entry. Commands that act on an installed root run the code installed in that root
// (ROOT/HOT/cli/main.js), each of its modules checked before it runs; everything else runs the repository's dev
// root (build/root, from `npm run build`).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);

function rootArg(args) {
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i];
    if (arg === '--') break;
    if (arg === '--root') return args[i + 1];
    if (arg.startsWith('--root=')) return arg.slice('--root='.length);
  }
  return undefined;
}

const root = rootArg(argv);
const installed = root ? join(resolve(root), 'HOT') : undefined;
const hot = installed && existsSync(join(installed, 'cli', 'main.js')) ? installed : join(repo, 'build', 'root', 'HOT');
const main = join(hot, 'cli', 'main.js');
if (!existsSync(main)) {
  process.stderr.write(
    `cplane: ERR_NOT_BUILT: no built code at ${JSON.stringify(main)}\n  hint: run \`npm run build\` in ${repo} first\n`,
  );
  process.exitCode = 3;
} else {
  const extraCommandDirs = [join(repo, 'build', 'tsc', 'scripts', 'commands')];
  // An installed root's code loads verified against that root's packages, through the repository's own
  // loader when it is built (the root's copy could have been edited), else the root's.
  const ownLoader = join(repo, 'build', 'root', 'HOT', 'kernel', 'loader', 'register.js');
  const loader = await import(
    pathToFileURL(existsSync(ownLoader) ? ownLoader : join(hot, 'kernel', 'loader', 'register.js')).href
  );
  if (hot === installed) loader.verifyModuleLoading(resolve(root), { trustedDirs: extraCommandDirs });
  process.exitCode = await loader.runEntry(async () => {
    const { runCli } = await import(pathToFileURL(main).href);
    return runCli({ argv, repo, extraCommandDirs });
  });
}
