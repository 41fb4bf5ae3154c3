/**
 * The prompt roles, defined once: the compiler's templates (HOT/compiler/roles/<role>.md), the prompt-spec and
 * dispatch-results schemas' `role` enums (tests fail when they drift) and the dispatch runtime draw from it.
 */
export const ROLES = ['orchestrator', 'reviewer', 'executor', 'searcher'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
