export * from './limits.js';
export * from './pack.js';
export * from './read.js';
export { MANIFEST_MEMBER, SIGNATURE_MEMBER } from './members.js';
