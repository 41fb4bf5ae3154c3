import type { ErrorCode, FindingCode, WarningCode } from '#kernel/catalogue/define.js';
import { envError } from '#kernel/env-errors.js';
import { isCpError } from '#kernel/errors.js';
import './codes.js';

/** One gate's verdict (SPEC §5). `--json` prints these as they are. */
export type GateStatus = 'PASS' | 'FAIL' | 'WARN';

export interface Finding {
  /** A finding code of the catalogue (gates/codes.ts); a WARN may carry a warning's, a crashed gate its error's. */
  code: FindingCode | WarningCode | ErrorCode;
  message: string;
  path?: string;
}

export interface GateResult {
  id: string;
  name: string;
  status: GateStatus;
  message: string;
  findings: Finding[];
}

export interface GateContext {
  root: string;
  /** Injected clock (orphan timeouts). */
  now: () => number;
  /** A DISPATCH older than this without its EXCHANGE is an orphan. */
  orphanTimeoutMs: number;
  /** Checkpoints kept outside the root (`--checkpoint FILE`) that G4 checks the chain against, besides the root's own. */
  checkpointFiles?: readonly string[];
  /** Public keys to verify checkpoints with instead of the trust store's checkpoint keys (`--checkpoint-key`). */
  checkpointKeyFiles?: readonly string[];
  /**
   * The PostgreSQL store whose chain G4 and G6 check instead of the SQLite file; null: SQLite; absent: the
   * root's effective gateway.store, read when a gate first needs it.
   */
  store?: string | null;
}

/** A gate module in HOT/gates/checks/: `export default defineGate({...})`. Any package may ship one. */
export interface Gate {
  id: string;
  name: string;
  describe: string;
  run(ctx: GateContext): Promise<GateResult> | GateResult;
}

export function defineGate(gate: Gate): Gate {
  return gate;
}

/** FAIL when any finding is an error, WARN when only warnings, else PASS with `passMessage`. */
export function verdict(
  gate: Pick<Gate, 'id' | 'name'>,
  errors: Finding[],
  passMessage: string,
  warnings: Finding[] = [],
): GateResult {
  const status: GateStatus = errors.length > 0 ? 'FAIL' : warnings.length > 0 ? 'WARN' : 'PASS';
  const findings = [...errors, ...warnings];
  const message =
    status === 'PASS'
      ? passMessage
      : `${findings.length} finding${findings.length === 1 ? '' : 's'}: ${findings
          .slice(0, 3)
          .map((f) => f.message)
          .join('; ')}${findings.length > 3 ? '; …' : ''}`;
  return { id: gate.id, name: gate.name, status, message, findings };
}

/** A gate that throws did not pass: its error becomes a FAIL finding, never a crash of gate_check. */
export function crashed(gate: Pick<Gate, 'id' | 'name'>, error: unknown): GateResult {
  // A coded refusal (or a fault of the machine: a full disk, a damaged database) keeps its code.
  const code: Finding['code'] = isCpError(error) ? error.code : (envError(error)?.code ?? 'GATE_CRASHED');
  const message = error instanceof Error ? error.message : String(error);
  return {
    id: gate.id,
    name: gate.name,
    status: 'FAIL',
    message: `gate could not run: ${message}`,
    findings: [{ code, message }],
  };
}
