// `npm run claude-code`: the opt-in check that Claude Code, unmodified, works through `cplane serve`. Claude Code
// (pinned by scripts/claude-code/pin/package-lock.json, installed into build/peers/claude-code: ~400 MB, so not part of
// `npm test`) runs headless (`claude -p`) with its base URL pointed at the gateway, which forwards to the tests'
// local upstream (real Anthropic wire format, streaming and tool use). The check: Claude Code exits 0 with the
// upstream's answer, every call it made is one EXCHANGE on the surface it used, its session header is the
// EXCHANGE's session, nothing was refused, no key reached the ledger, and the chain verifies.
//
// `npm run claude-code -- --fallback [--overloaded-ms N]`: the same through a routing alias whose primary upstream
// answers 529 overloaded for N ms (default 20 s; 60000 for the minute) and whose secondary answers
// (scripts/claude-code/fallback.ts): Claude Code keeps working, and each of its requests is one EXCHANGE listing
// the primary's failed attempt and the secondary's answer.
import { parseArgs } from 'node:util';
import { type Upstream, startUpstream } from '../../test/gateway/upstream.js';
import { type AgentCheck, runAgentCheck } from '../lib/agent-check.js';
import { CLAUDE_CODE, claudeAnswered, claudeSummary, KEYS } from './agent.js';
import { fallbackCheck } from './fallback.js';

function plainCheck(): AgentCheck {
  let upstream: Upstream | null = null;
  return {
    ...CLAUDE_CODE,
    async upstream() {
      const started = await startUpstream(KEYS);
      upstream = started;
      return {
        serveEnv: { ANTHROPIC_BASE_URL: started.url, ANTHROPIC_API_KEY: KEYS.anthropic },
        secrets: [KEYS.anthropic],
        describe: () => `${started.requests.length} upstream requests`,
        close: () => started.close(),
      };
    },
    check(run, ledger) {
      const seen = (upstream as Upstream).requests.filter((r) => r.path === '/v1/messages').length;
      const { answer, messages } = claudeAnswered(run, ledger, seen);
      return claudeSummary(answer, ledger, messages);
    },
  };
}

const { values } = parseArgs({
  options: { fallback: { type: 'boolean', default: false }, 'overloaded-ms': { type: 'string' } },
});
const overloadedMs = Number(values['overloaded-ms'] ?? 20_000);
if (!Number.isInteger(overloadedMs) || overloadedMs < 0) {
  process.stderr.write(
    `claude-code check: --overloaded-ms must be a whole number of ms, not ${values['overloaded-ms']}\n`,
  );
  process.exit(2);
}
process.exit(await runAgentCheck(values.fallback ? fallbackCheck(overloadedMs) : plainCheck()));
