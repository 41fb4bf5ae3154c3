export * from './integrity.js';
export * from './sri.js';
export * from './limits.js';
export * from './pack.js';
export * from './read.js';
export * from './read-bootstrap.js';
