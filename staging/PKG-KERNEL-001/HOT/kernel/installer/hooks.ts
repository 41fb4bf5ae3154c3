/**
 * Points in the commit where a test can stop the installer (the root entry script maps
 * CPLANE_TEST_CRASH_AT to a SIGKILL; the library only calls the hook).
 */
export type CommitStep = 'before-journal' | 'after-journal' | 'mid-files' | 'after-files' | 'after-registry' | 'after-ledger' | 'after-receipt';

export const COMMIT_STEPS: readonly CommitStep[] = ['before-journal', 'after-journal', 'mid-files', 'after-files', 'after-registry', 'after-ledger', 'after-receipt'];

export type StepHook = (step: CommitStep, packageId: string) => void;

export const noHook: StepHook = () => {};
