/**
 * Header texts of the cache-tiered message array. They are part of every prefix hash, so they are
 * contract: changing one byte invalidates every provider cache built on them.
 */
export const REPO_STRUCTURE_HEADER =
  '# Repository Structure\n\nBelow is a map of the repository showing classes, functions, and their relationships.\nUse this to understand the codebase structure and find relevant code.\n\n';
export const REPO_STRUCTURE_CONTINUED_HEADER = '# Repository Structure (continued)\n\n';

export const L0_FILES_HEADER = '# Reference Files (Stable)\n\nThese files are included for reference:\n\n';
export const TIER_FILES_HEADERS = {
  L1: '# Reference Files\n\nThese files are included for reference:\n\n',
  L2: '# Reference Files (L2)\n\nThese files are included for reference:\n\n',
  L3: '# Reference Files (L3)\n\nThese files are included for reference:\n\n',
} as const;

export const FILE_TREE_HEADER = '# Repository Files\n\nComplete list of files in the repository:\n\n';
export const URL_CONTEXT_HEADER =
  '# URL Context\n\nThe following content was fetched from URLs mentioned in the conversation:\n\n';
export const FILES_ACTIVE_HEADER = '# Working Files\n\nHere are the files:\n\n';

export const TIER_ACK = 'Ok.';
export const URL_ACK = "Ok, I've reviewed the URL content.";
export const URL_SEPARATOR = '\n---\n';
export const FILE_SEPARATOR = '\n\n';

/** Separator between the base system prompt and optional extra prompt (seed: two files joined by a blank line). */
export const SYSTEM_PART_SEPARATOR = '\n\n';
