// `npm run docs`: regenerate the README's code tables from the catalogue. Without --write, exit 1 if they drifted.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../lib/repo.js';
import { mergedCatalogue, withTables } from './catalogue.js';

const path = join(REPO, 'README.md');
const readme = readFileSync(path, 'utf8');
const generated = withTables(readme, await mergedCatalogue());
if (process.argv.includes('--write')) {
  if (generated !== readme) writeFileSync(path, generated);
  process.stderr.write(`docs: README.md code tables ${generated === readme ? 'already current' : 'regenerated'}\n`);
} else if (generated !== readme) {
  process.stderr.write('docs: README.md code tables differ from the catalogue; run `npm run docs`\n');
  process.exitCode = 1;
}
