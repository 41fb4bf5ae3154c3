// `npm run gemini-cli`: the opt-in check that Gemini CLI, unmodified, works through `cplane serve`. Gemini CLI (pinned
// by scripts/gemini-cli/pin/package-lock.json, installed into build/peers/gemini-cli, so not part of `npm test`) runs
// headless (`gemini -p`) with GOOGLE_GEMINI_BASE_URL pointed at the gateway and its cplane key as GEMINI_API_KEY; the
// gateway forwards to a local fake of the Gemini API (the tests' fixture: Google's wire format, SSE streaming, function
// calls), which answers the task with a call of the CLI's own `list_directory` tool, then with text once the CLI sends
// the tool's result. The check: the CLI exits 0 with that answer, every generation it made is one EXCHANGE on the
// surface it used, the tool round trip is among them, nothing was refused, no key reached the ledger, and the chain
// verifies.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type GeminiAnswer,
  type GeminiSeen,
  GeminiServer,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { type AgentCheck, fail, runAgentCheck } from '../lib/agent-check.js';
import { asJson, cliAnswered, geminiCli, type Json } from './cli.js';
import { translateCheck } from './translate.js';

const UPSTREAM_KEY = 'AIzaSyUPSTREAM-gemini-cli-CHECK-0123456789';
const ANSWER = 'The directory holds notes.txt.';

/** The CLI's declaration of `name` in a request's tools, if it offers it. */
function declared(body: Json | null, name: string): Json | null {
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) {
    const list = asJson(tool)?.functionDeclarations;
    for (const fn of Array.isArray(list) ? list : []) if (asJson(fn)?.name === name) return asJson(fn);
  }
  return null;
}

/**
 * The fake model: a JSON-mode request (the CLI's own checks, such as who speaks next) gets a JSON answer; a turn
 * carrying a tool's result gets the final text; a turn offering `list_directory` gets a call of it on the work
 * directory, its arguments filled from the declaration's required string parameters.
 */
function responder(workdir: string): (seen: GeminiSeen) => GeminiAnswer | undefined {
  return (seen) => {
    const body = seen.body;
    const config = asJson(body?.generationConfig);
    if (config?.responseMimeType === 'application/json' || config?.responseJsonSchema !== undefined)
      return { text: JSON.stringify({ next_speaker: 'user', reasoning: 'The task is complete.' }) };
    const contents = Array.isArray(body?.contents) ? (body.contents as Json[]) : [];
    const last = contents.at(-1);
    const parts = Array.isArray(last?.parts) ? (last.parts as Json[]) : [];
    if (parts.some((p) => p.functionResponse !== undefined)) return { text: ANSWER };
    const tool = declared(body, 'list_directory');
    if (tool === null) return { text: ANSWER };
    const schema = asJson(tool.parametersJsonSchema) ?? asJson(tool.parameters);
    const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
    const args: Json = {};
    for (const name of required.length > 0 ? required : ['dir_path']) args[name] = workdir;
    return { functionCall: { name: 'list_directory', args } };
  };
}

let upstream: GeminiServer | null = null;
const plain: AgentCheck = {
  ...geminiCli('gemini-2.5-flash'),
  async upstream(work) {
    writeFileSync(join(work.project, 'notes.txt'), 'cplane\n');
    const started = await GeminiServer.start(UPSTREAM_KEY, responder(work.project));
    upstream = started;
    return {
      serveEnv: { GOOGLE_GEMINI_BASE_URL: started.url, GEMINI_API_KEY: UPSTREAM_KEY },
      secrets: [UPSTREAM_KEY],
      describe: () =>
        `${started.seen.length} upstream requests: ${[...new Set(started.seen.map((s) => s.path.replace(/^.*:/, ':')))].join(' ')}`,
      close: () => started.close(),
    };
  },
  check(run, ledger) {
    const seen = (upstream as GeminiServer).seen;
    const generations = seen.filter((s) => /:(generateContent|streamGenerateContent)$/.test(s.path));
    const response = cliAnswered(run, ANSWER);
    const governed = ledger.exchanges.filter(
      (e) => e.metadata.surface === 'gemini.generate' || e.metadata.surface === 'gemini.stream',
    );
    if (governed.length === 0 || governed.length !== generations.length)
      fail(`${generations.length} generations reached the upstream, ${governed.length} EXCHANGEs recorded them`);
    const called = governed.filter((e) => e.metadata.finish_reason === 'tool_use');
    const listed = seen.some((s) => JSON.stringify(s.body?.contents ?? []).includes('"functionResponse"'));
    if (called.length === 0 || !listed) fail('no tool round trip went through the gateway');
    if (governed.some((e) => e.metadata.usage_complete !== true)) fail('an EXCHANGE has incomplete usage');
    const streamed = governed.filter((e) => e.metadata.stream === true).length;
    return (
      `${JSON.stringify(response).slice(0, 120)}; ` +
      `${ledger.exchanges.length} EXCHANGEs (${governed.length} generations, streamed: ${streamed}, tool calls: ${called.length})`
    );
  },
};

const { values } = parseArgs({ options: { translate: { type: 'boolean', default: false } } });
process.exit(await runAgentCheck(values.translate ? translateCheck() : plain));
