import { layoutAll } from './layout.js';

const summary = layoutAll();
process.stderr.write(`layout: ${summary.packages} packages, ${summary.files} files -> build/pkg, build/root\n`);
