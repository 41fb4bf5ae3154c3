import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-GATEWAY-001 raises (README: Error codes; adding a code is one line here, then `npm run docs`). */
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
