import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-GATEWAY-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_SERVE_LISTEN: {
    kind: 'error',
    meaning:
      "`cplane serve` cannot listen on `--host`/`--port` (the port is taken, or the address is not this machine's); nothing was opened for clients",
    hint: 'pick a free --port (0 takes any) and an address of this machine',
  },
  ERR_GATEWAY_CONFIG_INVALID: {
    kind: 'error',
    meaning: "the root's effective `gateway` config (package default with the operator's overrides) fails its schema",
    hint: 'see `cplane config show gateway`; fix the override with `cplane config set` or `cplane config unset`',
  },
  ERR_ROUTING_CONFIG_INVALID: {
    kind: 'error',
    meaning:
      "the gateway config's `routing` names a deployment twice, an alias target that is no deployment, a credential_env that is not set, or a provider that is not installed (or cannot serve as a gateway upstream)",
    hint: 'see docs/routing.md; fix it with `cplane config set gateway.routing …`',
  },
  ERR_CONSOLE_UNAUTHORIZED: {
    kind: 'error',
    meaning:
      'a request to `/console/` without a valid key holding the scope `console:read` (none, expired, revoked, or a route key): HTTP 401',
    hint: 'issue one with `cplane token issue --agent ADMIN --scope console:read` and send it as `Authorization: Bearer`, or sign in at /console/',
  },
  ERR_CONSOLE_QUERY: {
    kind: 'error',
    meaning: 'a console API query value is out of bounds (an id, a time, a cursor or a limit): HTTP 400',
    hint: 'the message names the parameter and an example',
  },
  ERR_REPORT_OUTPUT: {
    kind: 'error',
    meaning: '`cplane report --html FILE` cannot write FILE, or the console assets it inlines are not as installed',
    hint: 'pick a writable path; `cplane verify` says which installed file changed',
  },
  REFUSALS_NOT_SUMMARISED: {
    kind: 'warning',
    meaning:
      'at shutdown, the REFUSALS_SUPPRESSED record counting refusals without an authentic key could not be appended',
  },
  CANCELLED: {
    kind: 'outcome',
    meaning: 'a gateway call whose client went away: the upstream call was aborted, the partial content kept',
  },
  STREAM_TRUNCATED: { kind: 'outcome', meaning: "a gateway call's upstream stream ended before its final event" },
  UPSTREAM_STREAM_ERROR: { kind: 'outcome', meaning: "a gateway call's 2xx upstream stream carried an error event" },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
