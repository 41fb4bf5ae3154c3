import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpError, show } from '#kernel/errors.js';
import type { Role } from './roles.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const cache = new Map<string, string>();

/** Template text as shipped, with trailing newlines trimmed so the joins around it are exact. */
function readShipped(relPath: string): string {
  const hit = cache.get(relPath);
  if (hit !== undefined) return hit;
  let text: string;
  try {
    text = readFileSync(join(HERE, relPath), 'utf8').replace(/\s+$/, '');
  } catch (cause) {
    throw new CpError('ERR_PROMPT_TEMPLATE_MISSING', `prompt template ${show(relPath)} is missing from ${show(HERE)}`, {
      hint: 'reinstall PKG-COMPILER-001; its template files ship beside the compiler code',
      cause,
    });
  }
  cache.set(relPath, text);
  return text;
}

export function roleTemplate(role: Role): string {
  return readShipped(join('roles', `${role}.md`));
}

/** The fixed base system prompt: the same bytes for every role and turn. */
export function baseSystemPrompt(): string {
  return readShipped(join('prompts', 'system.md'));
}

export function ledgerPolicy(): string {
  return readShipped(join('prompts', 'ledger-policy.md'));
}
