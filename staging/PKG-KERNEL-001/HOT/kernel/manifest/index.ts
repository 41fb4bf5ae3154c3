export * from './manifest.js';
export * from './order.js';
export * from './paths.js';
export * from './validator.js';
export { schemaCheck, type CompiledValidator } from './schema-issues.js';
export * from './bootstrap.js';
export * from './bootstrap-schema.js';
export * from './manifest-schema.js';
