/**
 * Points in the commit where a test can stop the installer. The library only calls the hook it is given;
 * entry scripts pass testCrashHook(CPLANE_TEST_CRASH_AT), which turns a named step into a SIGKILL.
 */
export type CommitStep =
  | 'before-journal'
  | 'after-journal'
  | 'mid-files'
  | 'after-files'
  | 'after-registry'
  | 'after-ledger'
  | 'after-receipt';

export const COMMIT_STEPS: readonly CommitStep[] = [
  'before-journal',
  'after-journal',
  'mid-files',
  'after-files',
  'after-registry',
  'after-ledger',
  'after-receipt',
];

export type StepHook = (step: CommitStep, packageId: string) => void;

export const noHook: StepHook = () => {};

/** Test-only crash injection for entry scripts: CPLANE_TEST_CRASH_AT=<step>[@PKG] kills the process at that step. */
export function testCrashHook(spec: string | undefined): StepHook | undefined {
  if (!spec) return undefined;
  const [step, pkg] = spec.split('@');
  if (!(COMMIT_STEPS as readonly string[]).includes(step ?? '')) return undefined;
  return (at, packageId) => {
    if (at === step && (pkg === undefined || pkg === packageId)) process.kill(process.pid, 'SIGKILL');
  };
}
