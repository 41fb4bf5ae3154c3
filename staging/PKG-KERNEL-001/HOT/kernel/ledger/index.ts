export * from './entry.js';
export * from './ledger.js';
export * from './verify.js';
export { validateAppendInput } from './validate.js';
