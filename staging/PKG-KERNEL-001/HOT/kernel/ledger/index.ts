export * from './entry.js';
export * from './ledger.js';
export * from './verify.js';
export * from './orphans.js';
export { exportLedger, exportLines, importLedger, parseExport, readExportFile, readExportLines } from './jsonl.js';
export { compileQuery, HISTORY_SQL, ROW_COLUMNS } from './query.js';
export { validateAppendInput } from './validate.js';
