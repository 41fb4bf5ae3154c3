import { mkdtempSync, rmSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';

export const SAMPLE_TASKS = `# Tasks

Intro prose is ignored, and so are plain bullets:
- not a task

- [x] 1. Set up the package
  - _Requirements: 1.1_
- [-] 2. Build the parser
  - [x] 2.1 Parse checkboxes
    - _Prompt: Role: engineer | Task: parse the checkbox items_
    - _Requirements: 2.1, 2.2_
  - [-] 2.2 Parse metadata lines
    - _Prompt: Role: engineer | Task: parse _Prompt and _Requirements lines_
  - [ ] 2.3 Report line numbers
- [ ] 3. Write the docs
`;

/** A fresh temp directory removed when the test ends. */
export function tempDir(t: TestContext, prefix = 'cplane-dispatch-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Write tasks.md (in a spec-named folder) with a given mtime so fingerprints are deterministic. */
export function writeTasks(path: string, text: string, mtimeSeconds = 1_700_000_000): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  utimesSync(path, mtimeSeconds, mtimeSeconds);
  return path;
}

/** A clock that advances one second per reading, from a fixed start. */
export function steppingClock(start = Date.UTC(2026, 0, 1)): () => number {
  let now = start;
  return () => {
    now += 1000;
    return now;
  };
}
