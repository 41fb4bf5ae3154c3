import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-BUDGETER-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_BUDGET_CONFIG_INVALID: {
    kind: 'error',
    meaning: 'the budget config is missing, unreadable, not JSON, or fails its schema (`details.pointer`)',
    hint: 'fix the value at that JSON pointer; the schema is HOT/schemas/budget-config.schema.json',
  },
  ERR_BUDGET_DB: {
    kind: 'error',
    meaning:
      'the budget database cannot be opened or is not a cplane budget database (version 2; a version 1 file is migrated by its first writer), or a PostgreSQL database opened without create holds no cplane budget',
    hint: 'check the path and permissions; the file must be a cplane budget database',
  },
  ERR_BUDGET_INPUT_INVALID: {
    kind: 'error',
    meaning: 'a reserve/settle/release request is malformed (ids, negative or fractional counts, unknown fields)',
    hint: 'pass non-negative whole token counts and only the documented fields (see the message)',
  },
  ERR_BUDGET_REQUEST_CONFLICT: {
    kind: 'error',
    meaning: 'a `request_id` reused with different reserve values or a different settlement usage',
    hint: 'use a new request_id for a different call; the same request_id must repeat the same values',
  },
  ERR_BUDGET_REQUEST_STATE: {
    kind: 'error',
    meaning: 'settle after release, or release after settle',
    hint: 'a reservation is either settled (the call happened) or released (it did not), once',
  },
  ERR_BUDGET_UNKNOWN_REQUEST: {
    kind: 'error',
    meaning: 'settle or release of a `request_id` that was never reserved',
    hint: 'reserve the request first; settle and release need the request_id given to reserve',
  },
  ERR_BUDGET_LEDGER: {
    kind: 'error',
    meaning: 'the attached ledger refused a budget record; the budget change was rolled back',
    hint: 'fix the ledger (see the cause) and repeat the call; nothing was charged',
  },
  ERR_PRICES_FILE_INVALID: {
    kind: 'error',
    meaning:
      'a price file given to `prices import`/`prices diff` is unreadable, not JSON, neither a LiteLLM nor a models.dev catalogue, or holds a price that is not a finite number in 0..1000000 per million tokens (`details.model`, `details.field`); nothing was imported',
    hint: 'fix or fetch the file again; nothing was imported',
  },
  ERR_PRICES_IMPORT_TOO_LARGE: {
    kind: 'error',
    meaning: 'an import would put more prices in the operator config than it may hold; nothing was imported',
    hint: 'narrow the import with --provider (e.g. --provider openai --provider anthropic)',
  },
  BUDGET_EXHAUSTED: {
    kind: 'refusal',
    meaning: 'a token or cost limit of a budget scope would be exceeded by the reservation',
  },
  RATE_LIMITED: {
    kind: 'refusal',
    meaning: 'a rate limit (requests or tokens per window) would be exceeded; `retry_after_ms` says when to retry',
  },
  BUDGET_PRICE_UNKNOWN: {
    kind: 'refusal',
    meaning: 'a cost limit applies but the model has no price in the budget config',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
