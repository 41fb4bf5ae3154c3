import type { AppendInput } from '#kernel/ledger/index.js';
import type { KeyCheck } from './keys.js';
import type { RefusalSampler } from './refusal-sampler.js';
import { rejectionRecord } from './records.js';
import type { PromptRequest } from './request.js';

/**
 * A refusal's records: the PROMPT_REJECTED after the given ones, or none when the sampler counts it (no
 * authentic key, over the rate); a pending summary of counted ones rides along with the next one recorded.
 * Without a sampler (route(), whose caller is a local process) every refusal is recorded.
 */
export function refusalRecords(
  sampler: RefusalSampler | null | undefined,
  keys: KeyCheck,
  request: Partial<PromptRequest>,
  code: string,
  message: string,
  records: AppendInput[],
): AppendInput[] | null {
  const all = [...records, rejectionRecord(request, code, message)];
  if (!sampler) return all;
  if (all.length === 1 && keys.unauthenticated(code, request.auth_token) && !sampler.admit(code)) return null;
  const summary = sampler.takeSummary();
  return summary === null ? all : [summary, ...all];
}
