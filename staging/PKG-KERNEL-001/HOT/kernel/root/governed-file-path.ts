import { unsafePathReason } from '../manifest/paths.js';
import { isGovernedPath } from './layout.js';

/**
 * A governed file path as a manifest may declare it (plain relative segments, no control characters):
 * the only kind of path a receipt, registry row or journal may name. State files name paths that
 * commands rename, delete and read, so anything else there is refused before it is acted on.
 */
export function isGovernedFilePath(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= 4096 &&
    !/[\u0000-\u001f\u007f]/.test(value) &&
    unsafePathReason(value) === null &&
    isGovernedPath(value)
  );
}
