/**
 * The one catalogue of codes. Each package declares the codes it raises in its own `HOT/<area>/codes.ts`:
 *
 *   export const CODES = defineCodes({ ERR_X: { kind: 'error', meaning: '…', hint: '…' } });
 *   type Codes = typeof CODES;
 *   declare global { interface CplaneCodes extends Codes {} }
 *
 * The global interface merges every fragment, so a CpError with a misspelt code is a type error and a code
 * declared twice with different entries does not compile. At run time each fragment registers itself when
 * loaded; `loadCatalogue` (load.ts) loads every fragment of a root.
 */
export type CodeKind = 'error' | 'refusal' | 'finding' | 'warning' | 'outcome';

export interface CodeEntry {
  readonly kind: CodeKind;
  /** One line: when the code is raised. */
  readonly meaning: string;
  /** What to do about it; a CpError raised without a hint gets this one. */
  readonly hint?: string;
  /** The CLI's exit code when this code ends a command; defaults to the kind's (KIND_EXIT). */
  readonly exit?: number;
}

export type CodeFragment = Readonly<Record<string, CodeEntry>>;

declare global {
  /** Every catalogued code; each package's codes.ts extends it with its fragment. */
  interface CplaneCodes {}
}

export type Code = keyof CplaneCodes & string;
export type CodeOf<K extends CodeKind> = {
  [C in Code]: CplaneCodes[C] extends { kind: K } ? C : never;
}[Code];
export type ErrorCode = CodeOf<'error'>;
export type RefusalCode = CodeOf<'refusal'>;
export type FindingCode = CodeOf<'finding'>;
export type WarningCode = CodeOf<'warning'>;
export type OutcomeCode = CodeOf<'outcome'>;

/** A warning: something failed after the work was done and is reported, never swallowed. */
export interface Warning {
  code: WarningCode;
  message: string;
}

/** The exit code a command ends with when it reports a code of this kind (docs/codes.md, "Exit codes"). */
export const KIND_EXIT: Readonly<Record<CodeKind, number>> = {
  error: 3,
  refusal: 1,
  finding: 1,
  warning: 0,
  outcome: 1,
};

const ERROR_NAME = /^ERR_[A-Z0-9]+(?:_[A-Z0-9]+)*$/;
const OTHER_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

/** Error codes are `ERR_…`; refusals, findings and warnings are bare upper-case names, never `ERR_…`. */
type NamedByKind<F extends CodeFragment> = {
  [C in keyof F]: F[C]['kind'] extends 'error'
    ? C extends `ERR_${string}`
      ? F[C]
      : { kind: 'an error code starts with ERR_' }
    : C extends `ERR_${string}`
      ? { kind: 'only an error code starts with ERR_' }
      : F[C];
};

const registry = new Map<string, CodeEntry>();

function sameEntry(a: CodeEntry, b: CodeEntry): boolean {
  return a.kind === b.kind && a.meaning === b.meaning && a.hint === b.hint && a.exit === b.exit;
}

/** Declare a package's codes. Registers them (a second copy of the same fragment is a no-op) and returns them. */
export function defineCodes<const F extends CodeFragment>(fragment: F & NamedByKind<F>): F {
  const entries = Object.entries(fragment);
  for (const [code, entry] of entries) {
    const named = entry.kind === 'error' ? ERROR_NAME.test(code) : OTHER_NAME.test(code) && !code.startsWith('ERR_');
    if (!named) throw new Error(`code ${JSON.stringify(code)} is not a well-formed ${entry.kind} code`);
    const known = registry.get(code);
    if (known && !sameEntry(known, entry))
      throw new Error(`code ${code} is catalogued twice with different entries; one code, one place`);
  }
  // Registered only whole: a refused fragment leaves nothing behind.
  for (const [code, entry] of entries) registry.set(code, entry);
  return fragment;
}

/** The entry of a code from the fragments loaded so far (undefined for an unknown or not yet loaded code). */
export function codeEntry(code: string): CodeEntry | undefined {
  return registry.get(code);
}

/** Every code registered so far, sorted. */
export function registeredCodes(): ReadonlyMap<string, CodeEntry> {
  return new Map([...registry].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A warning object; the code is checked against the catalogue by the type. */
export function warning(code: WarningCode, message: string): Warning {
  return { code, message };
}

/** How a warning reads on one line of human output (the form warnings had when they were strings). */
export function warningText(w: Warning): string {
  return `${w.code}: ${w.message}`;
}
