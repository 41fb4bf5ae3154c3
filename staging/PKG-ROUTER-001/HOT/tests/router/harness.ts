import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger } from '#kernel/ledger/index.js';
import { loadRouterConfig, type RouterConfig } from '../../router/config.js';
import { Router, type RouterOptions } from '../../router/router.js';
import { MockProvider, type MockStep } from '#providers/mock/provider.js';
import type { PromptRequest } from '../../router/request.js';

export type Step = MockStep;

export interface Harness {
  dir: string;
  ledger: Ledger;
  router: Router;
  provider: MockProvider;
  config: RouterConfig;
  now: { ms: number };
  sleeps: number[];
}

export function harness(
  t: { after: (fn: () => void) => void },
  options: {
    script?: Step[];
    config?: Partial<RouterConfig>;
    router?: Partial<RouterOptions>;
  } = {},
): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-'));
  const now = { ms: Date.parse('2026-03-01T12:00:00Z') };
  const clock = (): number => now.ms;
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, clock, synchronous: 'OFF' });
  const config = loadRouterConfig(undefined, {
    default_provider: 'mock',
    default_model: 'mock-model-1',
    ...options.config,
  });
  const provider = new MockProvider({ script: options.script ?? [] });
  const sleeps: number[] = [];
  const router = new Router({
    ledger,
    config,
    providers: [provider],
    devMode: true,
    clock,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
      now.ms += ms;
    },
    spoolDir: join(dir, 'spool'),
    ...options.router,
  });
  t.after(() => {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, ledger, router, provider, config, now, sleeps };
}

export function request(overrides: Partial<PromptRequest> = {}): PromptRequest {
  return {
    prompt: 'What is the meaning of life?',
    contract_id: 'PRC-TEST-001',
    agent_id: 'AGENT-1',
    session_id: 'SES-1',
    work_order_id: 'WO-1',
    tier: 'hot',
    framework_id: 'FMWK-000',
    prompt_pack_id: 'PRM-TEST-001',
    agent_class: 'ADMIN',
    package_id: 'PKG-TEST',
    ...overrides,
  };
}
