// The Gemini provider against a fake Gemini API on 127.0.0.1 (fixtures/gemini-server.ts: its replies as Google's
// reference and the official SDK's recorded replies have them): both provider contracts.
import { providerContract } from '#tests/providers/contract.js';
import { httpHarness } from '#tests/providers/fixtures/http-harness.js';
import type { ScriptedReply } from '#tests/providers/fixtures/server.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { GeminiProvider } from '../../providers/gemini/provider.js';
import { contractAnswer, GeminiServer, geminiErrors, generateResponse, googleError } from './fixtures/gemini-server.js';

const KEY = 'AIzaSyTEST-gemini-key-must-never-leak-0123456';

const CONTRACT_ERRORS: Record<string, (status: number) => unknown> = {
  rate_limited: () => geminiErrors.rateLimited('7s'),
  overloaded: () => geminiErrors.overloaded(),
  server_error: () => geminiErrors.internal(),
  spend_limit: () => geminiErrors.spendLimit(),
  invalid_request: () => geminiErrors.invalidArgument(),
  auth: () => geminiErrors.unauthenticated(),
};

providerContract(
  httpHarness({
    name: 'GeminiProvider (generateContent on 127.0.0.1)',
    secret: KEY,
    reportsCacheWrite: false,
    errorRequestIds: false,
    makeProvider: (baseUrl, clock) =>
      new GeminiProvider({ config: { base_url: baseUrl, api_key: KEY }, env: {}, clock }),
    toReply(s): ScriptedReply {
      if (s.type === 'malformed') return { status: 200, body: '<html><body>502 Bad Gateway</body></html>' };
      if (s.type === 'answer') return { status: 200, body: generateResponse(contractAnswer(s), 'model-under-test') };
      // Google says how long to wait in RetryInfo; an HTTP date can only come from a proxy's retry-after header.
      const body =
        s.kind === 'rate_limited' && s.retry_after !== undefined && 'seconds' in s.retry_after
          ? geminiErrors.rateLimited(`${s.retry_after.seconds}s`)
          : s.kind === 'rate_limited'
            ? googleError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).')
            : (CONTRACT_ERRORS[s.kind]?.(s.status) ?? geminiErrors.internal());
      const headers: Record<string, string> =
        s.retry_after !== undefined && 'date' in s.retry_after ? { 'retry-after': s.retry_after.date } : {};
      return { status: s.status, headers, body };
    },
  }),
);

wireContract({
  name: 'GeminiProvider (generateContent and streamGenerateContent on 127.0.0.1)',
  secret: KEY,
  neutralSurface: 'gemini.generate',
  generation: ['gemini.generate', 'gemini.stream'],
  errorRequestIds: false,
  scripted: true,
  async open(clock) {
    const server = await GeminiServer.start(KEY);
    return {
      provider: new GeminiProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock }),
      answer: (_surface, a) => server.push({ answer: contractAnswer(a) }),
      rateLimited: (_requestId, seconds) => server.push({ status: 429, body: geminiErrors.rateLimited(`${seconds}s`) }),
      toolCall: (_surface, tool) => server.push({ answer: { functionCall: { name: tool.name, args: tool.input } } }),
      cutStream: () => server.push({ answer: { text: 'cut short here' }, cutAfterChunks: 1 }),
      received: () => server.seen.length,
      close: () => server.close(),
    };
  },
});
