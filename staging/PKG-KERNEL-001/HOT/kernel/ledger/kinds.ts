/**
 * The kinds a governed call writes: DISPATCH and EXCHANGE, half of a gateway's chain each, and the budget records
 * older chains hold for every call (now folded into those two). A query for a dense kind reads a few rows per match
 * in chain order (the primary key), no slower than through an index on the kind, so both stores index by kind only
 * the other, rare kinds. The list is part of those indexes' definitions: changing it would change existing files'
 * and databases' schema.
 */
export const DENSE_KINDS = ['BUDGET_ALLOCATED', 'DISPATCH', 'EXCHANGE', 'BUDGET_SETTLED'] as const;

const DENSE: ReadonlySet<string> = new Set(DENSE_KINDS);

/** Whether a kind is one the rare-kind index leaves out. */
export function isDenseKind(eventType: string): boolean {
  return DENSE.has(eventType);
}

/**
 * The SQLite rare-kind index's condition, as SQL: one inequality per dense kind. SQLite evaluates it at every insert,
 * and a NOT IN list of more than two values would build a temporary table each time. A query by a rare kind repeats
 * it word for word: SQLite uses a partial index only for a query whose WHERE holds each of the index's own terms.
 */
export const RARE_KIND_SQL = DENSE_KINDS.map((k) => `event_type <> '${k}'`).join(' AND ');
