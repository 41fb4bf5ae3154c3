import { writeFileSync } from 'node:fs';
import { COMPILED_VALIDATORS, compiledValidatorsSource } from './validators.js';

writeFileSync(COMPILED_VALIDATORS, compiledValidatorsSource());
process.stderr.write(`wrote ${COMPILED_VALIDATORS}\n`);
