import { resolve } from 'node:path';
import { writeFileAtomic } from '#kernel/atomic.js';
import { rootStoreUrl } from '#kernel/config/root-store.js';
import { CpError, show } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { loadConsoleAssets } from '../../gateway/console/assets.js';
import { openPgReport, openSqliteReport, reportData } from '../../gateway/console/report-data.js';
import { reportPage } from '../../gateway/console/page.js';

const MAX_SESSIONS = 10_000;
const MAX_TURNS = 100_000;

export default defineCommand({
  name: 'report',
  describe:
    'write the console as one self-contained HTML file (root, sessions, their turns, budgets, breakers, plots) for people without a running gateway',
  options: {
    ...rootOption('the root to report on'),
    html: { type: 'string', demandOption: true, describe: 'the HTML file to write (atomically)' },
    sessions: {
      type: 'number',
      default: 100,
      describe: `the newest sessions to include, 1 to ${MAX_SESSIONS}`,
    },
    turns: {
      type: 'number',
      default: 500,
      describe: `the most turns to include per session (its first ones), 1 to ${MAX_TURNS}`,
    },
    store: {
      type: 'string',
      describe:
        "report the chain, budgets and breakers in this PostgreSQL store, postgres://user@host/db with no password (env: CPLANE_DATABASE_URL; config: gateway.store; none: the root's files)",
    },
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const sessions = intOption('sessions', args.sessions, 1, MAX_SESSIONS) ?? 100;
    const turns = intOption('turns', args.turns, 1, MAX_TURNS) ?? 500;
    const out = resolve(ctx.cwd, args.html);
    const assets = loadConsoleAssets(root);
    const js = assets.ok ? assets.script : undefined;
    const css = assets.ok ? assets.files.get('console.css') : undefined;
    if (js === undefined || css === undefined) {
      throw new CpError(
        'ERR_REPORT_OUTPUT',
        `the console assets cannot be used: ${assets.ok ? 'missing' : assets.problem}`,
        {
          hint: 'reinstall PKG-GATEWAY-001, or run `cplane verify --root R` to see which file changed',
          details: { root },
        },
      );
    }
    // The root's store as its gateway's console reads it: a root whose hosts share PostgreSQL records only its own
    // governance in its SQLite file, so that file would report none of their calls.
    const url = rootStoreUrl(root, ctx.env, args.store);
    const source = url === null ? openSqliteReport(root) : await openPgReport(root, url);
    let data: Record<string, unknown>;
    try {
      data = await reportData(source.data, { sessions, turns });
    } finally {
      await source.close();
    }
    try {
      writeFileAtomic(out, reportPage(data, { js, css }));
    } catch (error) {
      throw new CpError('ERR_REPORT_OUTPUT', `cannot write ${show(out)}: ${(error as Error).message}`, {
        hint: 'pick a path in a directory you can write',
        details: { path: out },
        cause: error,
      });
    }
    const summary = {
      path: out,
      store: url === null ? 'sqlite' : 'postgres',
      sessions: (data.sessions as unknown[]).length,
    };
    ctx.report(args, summary, `wrote ${out}: ${summary.sessions} sessions${url === null ? '' : ' (postgres)'}`);
    return EXIT.OK;
  },
});
