/**
 * The console's modules (HOT/console/console-*.js, one job each) joined into one script for `cplane report --html`:
 * a report is one file opened without a server, so its page cannot fetch modules, and its CSP allows exactly one
 * inlined script by digest. The modules keep to a form this joins without a parser: imports are
 * `import { a, b } from './file.js';` of sibling files, exports are `export` before a top-level function or const,
 * and no two modules declare the same top-level name (checked: one scope holds them all once joined).
 */
const IMPORT = /^import \{([^}]*)\} from '\.\/([A-Za-z0-9_-]+\.js)';$/;
const DECLARATION = /^(?:export )?(?:async )?(?:function\*? |const |let |class )([A-Za-z_$][\w$]*)/;

export type Bundled = { ok: true; script: string } | { ok: false; problem: string };

/** The entry and every module it reaches, dependencies first, as one script; or what keeps them from joining. */
export function bundleModules(entry: string, read: (name: string) => string | undefined): Bundled {
  const order: string[] = [];
  const visiting = new Set<string>();
  const sources = new Map<string, string[]>();
  const visit = (name: string, from: string | null): string | null => {
    if (sources.has(name)) return null;
    if (visiting.has(name)) return `${name} is imported in a cycle (from ${from})`;
    const text = read(name);
    if (text === undefined) return from === null ? `${name} is missing` : `${name}, imported by ${from}, is missing`;
    visiting.add(name);
    const kept: string[] = [];
    for (const line of text.split('\n')) {
      const imported = IMPORT.exec(line);
      if (imported !== null) {
        const problem = visit(imported[2] as string, name);
        if (problem !== null) return problem;
        continue;
      }
      if (/^\s*(import|export)\b(?! (async )?function|\s*const )/.test(line))
        return `${name} has an import or export the report cannot join: ${line.slice(0, 80)}`;
      kept.push(line.replace(/^export /, ''));
    }
    visiting.delete(name);
    sources.set(name, kept);
    order.push(name);
    return null;
  };
  const problem = visit(entry, null);
  if (problem !== null) return { ok: false, problem };
  const declared = new Map<string, string>();
  for (const name of order)
    for (const line of sources.get(name) ?? []) {
      const id = DECLARATION.exec(line)?.[1];
      if (id === undefined) continue;
      const first = declared.get(id);
      if (first !== undefined) return { ok: false, problem: `${id} is declared by both ${first} and ${name}` };
      declared.set(id, name);
    }
  return { ok: true, script: order.map((name) => `// ${name}\n${(sources.get(name) ?? []).join('\n')}`).join('\n') };
}
