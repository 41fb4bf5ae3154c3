// ESM loader hooks (module.register; they run in Node's hooks thread): every module a governed root's
// code imports is checked by ModuleGate before Node sees its source, and the bytes that were hashed are
// the bytes that run.
import { fileURLToPath } from 'node:url';
import type { AllowList } from './allow-list.js';
import { ModuleGate } from './module-gate.js';

interface ResolveContext { parentURL?: string | undefined; conditions: string[]; importAttributes?: Record<string, string> }
interface ResolveResult { url: string; format?: string | null | undefined; shortCircuit?: boolean }
interface LoadContext { format?: string | null | undefined; conditions: string[]; importAttributes?: Record<string, string> }
interface LoadResult { format: string; source?: string | ArrayBuffer | Uint8Array | null | undefined; shortCircuit?: boolean }

let gate: ModuleGate | undefined;

export function initialize(data: { root: string; allow: AllowList; trustedDirs: string[] }): void {
  gate = new ModuleGate(data.root, data.allow, data.trustedDirs);
}

function isBare(specifier: string): boolean {
  return !/^(\.{0,2}\/|[a-zA-Z][a-zA-Z0-9+.-]*:|#)/.test(specifier);
}

export async function resolve(specifier: string, context: ResolveContext, next: (s: string, c: ResolveContext) => Promise<ResolveResult>): Promise<ResolveResult> {
  const result = await next(specifier, context);
  if (gate === undefined || !result.url.startsWith('file:') || !context.parentURL?.startsWith('file:')) return result;
  const importer = fileURLToPath(context.parentURL);
  if (!gate.inside(importer)) return result;
  if (isBare(specifier)) gate.checkBare(importer, specifier);
  // A governed module may import only governed files: outside the root nothing vouches for the bytes.
  gate.checkLocation(fileURLToPath(result.url));
  return result;
}

export async function load(url: string, context: LoadContext, next: (u: string, c: LoadContext) => Promise<LoadResult>): Promise<LoadResult> {
  const result = await next(url, context);
  if (gate === undefined || !url.startsWith('file:')) return result;
  const path = fileURLToPath(url);
  if (!gate.inside(path)) return result;
  // CommonJS without source is read by the main thread's loader, which checks it there (require.ts).
  if (result.source === null || result.source === undefined) return result;
  const bytes = typeof result.source === 'string' ? Buffer.from(result.source, 'utf8')
    : result.source instanceof Uint8Array ? result.source : new Uint8Array(result.source);
  gate.checkFile(path, bytes);
  return result;
}
