export { Budgeter, type BudgeterOptions } from './budgeter.js';
export {
  type BudgetConfig,
  type BudgetMode,
  type ModelPrice,
  type Limit,
  type RateLimit,
  type ScopeKind,
  parseBudgetConfig,
  loadBudgetConfig,
  loadBudgetConfigForRoot,
  budgetConfigPathForRoot,
  budgetDbPathForRoot,
} from './config.js';
export type { ReserveInput } from './input.js';
export type { Usage, NormalizedUsage } from './pricing.js';
export type { Reservation, BudgetViolation, ReserveOutcome, Granted, Refused, Settled, Released } from './results.js';
export { BUDGET_EVENTS } from './records.js';
export type { BudgetStatus, ScopeStatus } from './status.js';
export type { BudgetCrossing } from './crossings.js';
export type { Period, PeriodSpan } from './periods.js';
