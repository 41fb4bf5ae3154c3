let lastMs = Number.NaN;
let lastText = '';

/**
 * `new Date(ms).toISOString()`, remembering the last instant: a reserve and its settle format the same millisecond
 * several times (created_at, finished_at, the kept records' since), and each format costs ~6,700 instructions
 * (callgrind: V8 prints it through snprintf). An invalid time throws as toISOString does.
 */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastText;
}
