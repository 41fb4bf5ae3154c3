import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-DISPATCH-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_PROGRESS_LEDGER_MISSING_TASKS: {
    kind: 'error',
    meaning: 'tasks.md is missing or unreadable (`details.error_type = progress_ledger_missing_tasks`, `details.path`)',
  },
  ERR_PROGRESS_LEDGER_PARSE_FAILED: {
    kind: 'error',
    meaning:
      'tasks.md is malformed (`details.error_type = progress_ledger_parse_failed`, `details.path`, `details.line`)',
  },
  ERR_DISPATCH_RUN_EXISTS: {
    kind: 'error',
    meaning: '`dispatch init` with a run id that already exists',
    hint: 'pick a new --run id; a run keeps its history',
  },
  ERR_DISPATCH_RUN_NOT_FOUND: {
    kind: 'error',
    meaning: 'compile, ingest or status for an unknown run',
    hint: 'start one with `cplane dispatch init --root R --tasks FILE --run RUN`',
  },
  ERR_DISPATCH_RUN_ID_INVALID: {
    kind: 'error',
    meaning: 'a run id outside `[A-Za-z0-9._-]{1,128}`',
    hint: 'use 1-128 letters, digits, dot, dash or underscore, starting with a letter or digit',
  },
  ERR_DISPATCH_SPEC_NAME_INVALID: {
    kind: 'error',
    meaning:
      'a spec name (`--spec-name`, or the folder holding tasks.md) that is empty, over 128 characters, has control characters or is not well-formed text',
    hint: 'pass --spec-name with 1-128 characters on one line',
  },
  ERR_DISPATCH_TASK_UNKNOWN: {
    kind: 'error',
    meaning: "a task id that is not in the run's tasks.md",
    hint: 'task ids are dotted numbers such as 1 or 2.1',
  },
  ERR_DISPATCH_ROLE_INVALID: { kind: 'error', meaning: 'a role other than orchestrator, reviewer, executor, searcher' },
  ERR_DISPATCH_OUTPUT_INVALID: {
    kind: 'error',
    meaning: 'a malformed ingest payload',
    hint: 'pass role implementer with outcome completed|blocked|failed, or role reviewer with assessment approved|needs_changes|blocked',
  },
  ERR_DISPATCH_CONFIG_INVALID: {
    kind: 'error',
    meaning: '`HOT/config/dispatch.json` is unreadable or fails its schema',
    hint: 'restore HOT/config/dispatch.json from the PKG-DISPATCH-001 package',
  },
  ERR_DISPATCH_STORE_UNREADABLE: {
    kind: 'error',
    meaning: '`HOT/registries/dispatch.sqlite` is not a dispatch store or has the wrong version',
    hint: 'the file is not a cplane dispatch store; move it aside and re-run dispatch init',
  },
  ERR_DISPATCH_SNAPSHOT_CORRUPT: {
    kind: 'error',
    meaning: "a snapshot's stored hash does not match its content",
    hint: 'the dispatch store was edited outside cplane; start a new run with dispatch init',
  },
  ERR_DISPATCH_ROOT_NOT_FOUND: {
    kind: 'error',
    meaning: '`--root` does not exist when the first run would create the store',
    hint: 'pass --root with the path of an existing cplane root',
  },
  ERR_DISPATCH_TELEMETRY_FAILED: {
    kind: 'error',
    meaning: 'state was saved but the kernel-ledger append failed (`details.snapshot_revision`)',
    hint: 'check the kernel ledger with `cplane ledger verify`; the dispatch state itself is intact',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
