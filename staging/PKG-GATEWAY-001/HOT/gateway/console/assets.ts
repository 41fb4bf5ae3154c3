import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '#kernel/canonical.js';
import { readReceipt } from '#kernel/registry/receipt.js';
import { bundleModules } from './bundle.js';

/** The console's files as the gateway package ships them (root-relative). */
export const CONSOLE_ASSET_DIR = 'HOT/console/';
export const CONSOLE_PACKAGE = 'PKG-GATEWAY-001';

export interface ConsoleAsset {
  bytes: Buffer;
  type: string;
  /** `sha256-<base64>` of the bytes: the CSP source a report inlines the file under. */
  csp: string;
}

export type ConsoleAssets =
  /** `files` served one by one (console.js imports its modules); `script` all of them in one, for a report. */
  { ok: true; files: Map<string, ConsoleAsset>; script: ConsoleAsset } | { ok: false; problem: string };

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * Reads the console's files once, each checked against the digest its package's receipt records: a file that
 * was edited after install is not served (the console answers 503 naming it), as the loader refuses code.
 */
export function loadConsoleAssets(root: string): ConsoleAssets {
  const receipt = readReceipt(root, CONSOLE_PACKAGE);
  if (receipt === null) return { ok: false, problem: `${CONSOLE_PACKAGE} is not installed in this root` };
  const files = new Map<string, ConsoleAsset>();
  for (const file of receipt.files) {
    if (!file.path.startsWith(CONSOLE_ASSET_DIR)) continue;
    const name = file.path.slice(CONSOLE_ASSET_DIR.length);
    const type = TYPES[name.slice(name.lastIndexOf('.'))];
    if (type === undefined || name.includes('/')) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(root, file.path));
    } catch (error) {
      return { ok: false, problem: `${file.path} cannot be read (${(error as NodeJS.ErrnoException).code ?? error})` };
    }
    if (`sha256:${sha256Hex(bytes)}` !== file.sha256)
      return { ok: false, problem: `${file.path} does not match the digest ${CONSOLE_PACKAGE} installed` };
    files.set(name, asset(bytes, type));
  }
  if (!files.has('console.css'))
    return { ok: false, problem: `${CONSOLE_ASSET_DIR}console.css is not in ${CONSOLE_PACKAGE}` };
  // Every module console.js reaches is owned and checked above: one missing fails the console as a whole.
  const bundled = bundleModules('console.js', (name) => files.get(name)?.bytes.toString('utf8'));
  if (!bundled.ok) return { ok: false, problem: `${CONSOLE_ASSET_DIR}: ${bundled.problem} in ${CONSOLE_PACKAGE}` };
  return { ok: true, files, script: asset(Buffer.from(bundled.script, 'utf8'), TYPES['.js'] as string) };
}

function asset(bytes: Buffer, type: string): ConsoleAsset {
  return { bytes, type, csp: `sha256-${Buffer.from(sha256Hex(bytes), 'hex').toString('base64')}` };
}
