// `npm run docs`: regenerate the code tables of docs/codes.md from the catalogue. Without --write, exit 1 if they drifted.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../lib/repo.js';
import { CODES_DOC, mergedCatalogue, withTables } from './catalogue.js';

const path = join(REPO, CODES_DOC);
const doc = readFileSync(path, 'utf8');
const generated = withTables(doc, await mergedCatalogue());
if (process.argv.includes('--write')) {
  if (generated !== doc) writeFileSync(path, generated);
  process.stderr.write(`docs: ${CODES_DOC} code tables ${generated === doc ? 'already current' : 'regenerated'}\n`);
} else if (generated !== doc) {
  process.stderr.write(`docs: ${CODES_DOC} code tables differ from the catalogue; run \`npm run docs\`\n`);
  process.exitCode = 1;
}
