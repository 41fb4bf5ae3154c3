import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-ROUTER-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_ROUTER_CONFIG_INVALID: {
    kind: 'error',
    meaning: '`HOT/config/router.json` is unreadable or fails its schema',
    hint: 'fix the file against HOT/schemas/router-config.schema.json',
  },
  ERR_ROUTER_PROVIDER_UNAVAILABLE: {
    kind: 'error',
    meaning: 'the requested provider is not installed in the root (the hint lists those that are)',
  },
  ERR_ROUTE_EXCHANGE_UNRECORDED: {
    kind: 'error',
    meaning:
      '`cplane route`: the answer arrived but its EXCHANGE could be neither appended nor spooled; the error (stderr, `--json` `details.exchange`) carries the whole exchange',
    hint: 'free disk space (or fix the ledger) and append these records by hand: nothing else holds them',
  },
  ERR_AUTH_NO_SECRET: {
    kind: 'error',
    meaning: '`token issue` without `$CPLANE_AUTH_SECRET`',
    hint: 'export CPLANE_AUTH_SECRET=<a long random string> (the router verifies with the same secret)',
  },
  ERR_TOKEN_INVALID: {
    kind: 'error',
    meaning: '`token revoke --token` of something that is not a cpt1 token, or `--key-id` that is not a key id',
    hint: 'pass the whole token as `token issue` printed it, or its `claims.jti` as --key-id',
  },
  ERR_KEY_REQUEST_INVALID: {
    kind: 'error',
    meaning:
      'a key issue or rotate request (`POST /admin/keys`, `token issue`, `token rotate`) names a bad agent, scope, ttl_s, budget_scope or grace_s',
    hint: 'agent: 1-200 printable characters; scopes: route:*|route:<id>|model:*|model:<id>|console:read|metrics:read|keys:admin; ttl_s 1-31622400; grace_s 0-2592000',
  },
  ERR_KEY_UNKNOWN: {
    kind: 'error',
    meaning: 'a key id the key inventory has no KEY_ISSUED record of (rotate or delete)',
    hint: 'list the keys with `GET /admin/keys` or `cplane token list`; a key issued before the inventory existed can still be revoked with `token revoke`',
  },
  ERR_REVOCATION_LIST_INVALID: {
    kind: 'error',
    meaning:
      '`HOT/registries/revoked-keys.json` is not JSON or not a revocation list (every authentication is refused until it is fixed)',
    hint: 'restore the file from a backup; only `cplane token revoke` writes it',
  },
  ERR_REVOCATION_LIST_STALE: {
    kind: 'error',
    meaning:
      'the revoked keys on PostgreSQL (`cplane_revoked_keys`) were not read for longer than the gateway may trust its copy (every authentication is refused until a read succeeds)',
    hint: 'bring the database back or fix the connection (the refusal lifts at the next successful read, within the poll interval)',
  },
  VALIDATION_FAILED: { kind: 'refusal', meaning: 'the route request is malformed (fields, types, bounds)' },
  UNKNOWN_PROVIDER: { kind: 'refusal', meaning: 'the request names a provider the router was not given' },
  AUTH_MISSING: { kind: 'refusal', meaning: 'no auth token (and the router is not in dev mode)' },
  AUTH_MALFORMED: {
    kind: 'refusal',
    meaning: 'the auth token is not a `cpt1` token, or its payload is not JSON or lacks a field',
  },
  AUTH_BAD_SIGNATURE: { kind: 'refusal', meaning: "the auth token's signature does not verify" },
  AUTH_EXPIRED: { kind: 'refusal', meaning: 'the auth token has expired' },
  AUTH_NOT_YET_VALID: { kind: 'refusal', meaning: 'the auth token is issued in the future' },
  AUTH_WRONG_AGENT: { kind: 'refusal', meaning: 'the auth token was issued to another agent' },
  AUTH_SCOPE: {
    kind: 'refusal',
    meaning: 'the auth token has no `route:<contract_id>` (or `route:*`) scope for this contract',
  },
  AUTH_UNKNOWN_KEY: { kind: 'refusal', meaning: 'the auth token names a key id the router does not hold' },
  AUTH_MODEL_SCOPE: {
    kind: 'refusal',
    meaning: 'the auth token names models in its scopes (`model:<id>`) and not the one this call uses',
  },
  AUTH_REVOKED: { kind: 'refusal', meaning: 'the auth token was revoked (`cplane token revoke`) before it expired' },
  AUTH_REVOCATION_LIST_INVALID: {
    kind: 'refusal',
    meaning:
      'the revocation list `HOT/registries/revoked-keys.json` cannot be trusted (not a regular file holding a list): every key is refused',
  },
  BUDGET_ERROR: {
    kind: 'refusal',
    meaning:
      'the budgeter refused the reservation with a coded error (a bad request, its database or ledger); a bug is `ERR_INTERNAL`, not this',
  },
  BUDGET_UNAVAILABLE: {
    kind: 'refusal',
    meaning:
      'the budget database cannot be written (a full disk, a read-only mount, a failing device): the call is refused before it reaches the provider; it can be retried once the operator has fixed the machine',
  },
  LEDGER_UNAVAILABLE: {
    kind: 'refusal',
    meaning:
      'the ledger refused the DISPATCH record (a full disk, a read-only mount, a failing device): the call is refused before it reaches the provider and its reservation released; it can be retried once the operator has fixed the machine',
  },
  CIRCUIT_OPEN: {
    kind: 'refusal',
    meaning: 'the circuit breaker for this provider and model is open after repeated failures',
  },
  SPOOL_PENDING: {
    kind: 'warning',
    meaning:
      'spooled exchanges are left because the ledger refused one; they are appended when the ledger takes writes again (G6 WARNs)',
  },
  SPOOL_REMOVE_FAILED: {
    kind: 'warning',
    meaning: 'a spooled exchange was appended but its file could not be removed',
  },
  SPOOL_QUARANTINED: {
    kind: 'warning',
    meaning: 'a spool entry that cannot be read or appended was moved to the quarantine directory (G6 WARNs)',
  },
  SPOOL_QUARANTINE_FAILED: { kind: 'warning', meaning: 'a bad spool entry could not be moved aside; it is skipped' },
  EXCHANGE_RECORD_DEGRADED: {
    kind: 'warning',
    meaning: "the EXCHANGE was recorded without the provider's raw usage, which could not be recorded",
  },
  LEDGER_WRITE_FAILED: {
    kind: 'warning',
    meaning: 'the ledger refused the EXCHANGE; it was spooled and is appended when the ledger takes writes again',
  },
  EXCHANGE_NOT_RECORDED: {
    kind: 'warning',
    meaning: 'the EXCHANGE could be neither appended nor spooled; the response carries it in `unrecorded_exchange`',
  },
  PROVIDER_SKIPPED: {
    kind: 'warning',
    meaning: 'an installed provider module was refused by the module loader (unowned or changed) and skipped',
  },
  BUDGET_RELEASE_FAILED: { kind: 'warning', meaning: 'the budget reservation could not be released' },
  BUDGET_USAGE_UNKNOWN: {
    kind: 'warning',
    meaning: 'the call was settled as unknown usage; the reservation stays charged',
  },
  BUDGET_SETTLE_FAILED: { kind: 'warning', meaning: 'settling the budget with the reported usage failed' },
  BUDGET_RECONCILE_FAILED: {
    kind: 'warning',
    meaning:
      'a pass settling orphaned budget reservations on the shared store failed; they stay pending until the next pass',
  },
  CHECKPOINT_FAILED: { kind: 'warning', meaning: 'the periodic checkpoint of the ledger head could not be written' },
  WITNESS_PUSH_FAILED: {
    kind: 'warning',
    meaning:
      'a witness refused a checkpoint the gateway pushed (a fork, a bad proof, an unknown log) or could not be reached after every retry; calls are not affected',
  },
  BREAKER_STATE_NOT_SAVED: {
    kind: 'warning',
    meaning: '`HOT/registries/breakers.json` could not be written when the router closed',
  },
  BUDGET_CLOSE_FAILED: { kind: 'warning', meaning: 'the budget database could not be closed cleanly' },
  LEDGER_CLOSE_FAILED: { kind: 'warning', meaning: 'the ledger could not be closed cleanly' },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
