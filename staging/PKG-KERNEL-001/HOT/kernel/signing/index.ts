export * from './keys.js';
export * from './signing.js';
export * from './trust.js';
export * from './root-key.js';
