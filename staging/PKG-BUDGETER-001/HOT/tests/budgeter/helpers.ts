import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { BudgetConfig } from '../../budgeter/index.js';

export function tempDir(t: TestContext, prefix = 'cp-budget-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A config with round prices so expected costs can be worked out by hand. */
export function testConfig(overrides: Partial<BudgetConfig> = {}): BudgetConfig {
  return {
    schema_version: '1',
    mode: 'enforce',
    currency: 'USD',
    durability: 'normal',
    pricing: {
      m1: {
        input_per_mtok: 2,
        output_per_mtok: 10,
        cache_read_per_mtok: 0.2,
        cache_write_5m_per_mtok: 2.5,
        cache_write_1h_per_mtok: 4,
      },
    },
    limits: {},
    rate_limits: {},
    ...overrides,
  };
}

/** A controllable clock in milliseconds. */
export function manualClock(start = Date.UTC(2026, 0, 1)): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

export function request(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_id: id,
    session_id: 'S1',
    model: 'm1',
    estimated_input_tokens: 100,
    max_output_tokens: 50,
    ...extra,
  };
}
