// What every translated call through `cplane serve` is checked against, whatever SDK made it: its EXCHANGEs, and
// their usage being the upstream's own (test/gateway/upstream.ts's USAGE), bucket by bucket.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ledgerEntries } from './harness.js';
import { USAGE } from './upstream.js';

/** The EXCHANGEs recorded for one session on a root. */
export const exchangesIn = (root: string, session: string) =>
  ledgerEntries(root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

/** An EXCHANGE served by the local Anthropic upstream for claude-sonnet-4-5: its usage exactly the upstream's. */
export function assertAnthropicUpstreamUsage(meta: Record<string, unknown>): void {
  assert.equal(meta.input_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(meta.output_tokens, USAGE.output);
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead);
  assert.equal(meta.cache_write_tokens, USAGE.cacheWrite);
  assert.equal(meta.usage_complete, true);
  assert.equal(meta.upstream_surface, 'anthropic.messages');
  assert.equal(meta.model_id, 'claude-sonnet-4-5');
}

/** The official Anthropic and OpenAI SDK clients of a served gateway and key (read when a client is made), per session. */
export function sdkClients(at: () => { url: string; key: string }) {
  const headers = (session: string) => ({ 'x-cplane-session': session });
  return {
    anthropic: (session: string): Anthropic =>
      new Anthropic({ apiKey: at().key, baseURL: at().url, maxRetries: 0, defaultHeaders: headers(session) }),
    openai: (session: string): OpenAI =>
      new OpenAI({ apiKey: at().key, baseURL: `${at().url}/v1`, maxRetries: 0, defaultHeaders: headers(session) }),
  };
}
