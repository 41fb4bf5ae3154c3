export * from './entry.js';
export * from './ledger.js';
export * from './verify.js';
export * from './orphans.js';
export {
  exportLedger,
  exportLines,
  importLedger,
  parseExport,
  parseExportWithContent,
  readExportLines,
} from './jsonl.js';
export * from './content.js';
export { compileQuery, HISTORY_SQL, ROW_COLUMNS } from './query.js';
export { DENSE_KINDS, isDenseKind } from './kinds.js';
export { validateAppendInput } from './validate.js';
export { schemaProblems, type SchemaProblem, type SchemaProblemKind } from './schema-check.js';
export * from './future.js';
export * from './checkpoint.js';
export * from './checkpoint-store.js';
export * from './checkpoint-check.js';
export * from './sessions.js';
export * from './store.js';
export * from './redaction.js';
export * from './commits.js';
