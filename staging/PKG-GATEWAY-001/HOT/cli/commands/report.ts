import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { writeFileAtomic } from '#kernel/atomic.js';
import { CpError, show } from '#kernel/errors.js';
import { Ledger, ledgerPathForRoot, type SessionSummary, type SessionTurn } from '#kernel/ledger/index.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { intOption } from '#cli/option-values.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { breakerStatePath, readBreakerStates } from '#router/open.js';
import { loadConsoleAssets } from '../../gateway/console/assets.js';
import { SqliteConsoleData } from '../../gateway/console/sqlite-data.js';
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
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const sessionLimit = intOption('sessions', args.sessions, 1, MAX_SESSIONS) ?? 100;
    const turnLimit = intOption('turns', args.turns, 1, MAX_TURNS) ?? 500;
    const out = resolve(ctx.cwd, args.html);
    const assets = loadConsoleAssets(root);
    const js = assets.ok ? assets.files.get('console.js') : undefined;
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
    const path = ledgerPathForRoot(root);
    if (!existsSync(path)) {
      throw new CpError('ERR_REPORT_OUTPUT', `${show(root)} has no ledger yet: there is nothing to report`, {
        hint: 'run some calls through the root first (cplane serve, cplane route)',
        details: { root, ledger: path },
      });
    }
    const ledger = Ledger.open(path, { readonly: true });
    let data: Record<string, unknown>;
    try {
      const view = new SqliteConsoleData({ root, ledger, breakers: () => readBreakerStates(breakerStatePath(root)) });
      const sessions: SessionSummary[] = [];
      let before: number | undefined;
      while (sessions.length < sessionLimit) {
        const page = await view.sessions({
          limit: Math.min(200, sessionLimit - sessions.length),
          ...(before === undefined ? {} : { before }),
        });
        sessions.push(...page.sessions);
        if (page.next_before === null) break;
        before = page.next_before;
      }
      const turns: Record<string, SessionTurn[]> = {};
      for (const s of sessions) {
        const list: SessionTurn[] = [];
        let after: number | undefined;
        while (list.length < turnLimit) {
          const page = await view.session(s.session_id, {
            limit: Math.min(200, turnLimit - list.length),
            ...(after === undefined ? {} : { after }),
          });
          list.push(...page.turns);
          if (page.next_after === null) break;
          after = page.next_after;
        }
        turns[s.session_id] = list;
      }
      data = {
        generated_at: new Date().toISOString(),
        root: await view.rootView({ verify: true }),
        sessions,
        turns,
        budgets: await view.budgets(),
        breakers: await view.breakers(),
        plots: await view.plots(),
      };
    } finally {
      ledger.close();
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
    const summary = { path: out, sessions: (data.sessions as unknown[]).length };
    ctx.report(args, summary, `wrote ${out}: ${summary.sessions} sessions`);
    return EXIT.OK;
  },
});
