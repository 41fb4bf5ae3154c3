import { CpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import type { AssetClassification } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import type { ClassifyRule } from './template.js';

/** Built-in rules by directory, first match wins; a package's own rules apply only to what these leave unclassified. */
const BUILT_IN: ReadonlyArray<[(path: string) => boolean, AssetClassification]> = [
  [(p) => p.startsWith('HOT/node_modules/'), 'runtime'],
  [(p) => p.startsWith('HOT/tests/'), 'test'],
  [(p) => p.endsWith('.md'), 'doc'],
  [(p) => p.startsWith('HOT/kernel/'), 'kernel'],
  [(p) => p.startsWith('HOT/scripts/'), 'script'],
  [(p) => p.startsWith('HOT/schemas/'), 'schema'],
  [(p) => p.startsWith('HOT/config/'), 'config'],
  [(p) => p.startsWith('HOT/registries/'), 'registry'],
];

function matches(rule: ClassifyRule, path: string): boolean {
  return (
    (rule.prefix === undefined || path.startsWith(rule.prefix)) &&
    (rule.suffix === undefined || path.endsWith(rule.suffix))
  );
}

/** What is left after the package's rules: its code runs as part of the plane, its JSON is data it reads. */
const FALLBACK: ReadonlyArray<[(path: string) => boolean, AssetClassification]> = [
  [(p) => /\.(js|mjs|cjs)$/.test(p), 'kernel'],
  [(p) => p.endsWith('.json'), 'config'],
];

export function classify(path: string, rules: readonly ClassifyRule[], packageId: string): AssetClassification {
  for (const [test, classification] of BUILT_IN) if (test(path)) return classification;
  for (const rule of rules) if (matches(rule, path)) return rule.classification;
  for (const [test, classification] of FALLBACK) if (test(path)) return classification;
  throw new CpError('ERR_BUILD_UNCLASSIFIED', `${packageId}: no classification for ${show(path)}`, {
    hint: 'add a rule to the package\'s manifest.template.json: "build": {"classify": [{"prefix": "HOT/<dir>/", "classification": "kernel"}]}',
    details: { package_id: packageId, path },
  });
}
