import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-COMPILER-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_PROMPT_SPEC_INVALID: {
    kind: 'error',
    meaning: 'the spec is not JSON, too large, or fails `prompt-spec.schema.json` (`details.pointer`)',
    hint: 'fix the spec at the JSON pointer shown; the format is in HOT/schemas/prompt-spec.schema.json',
  },
  ERR_PROMPT_SPEC_UNREADABLE: {
    kind: 'error',
    meaning: 'the `--spec` file cannot be read',
    hint: 'pass --spec with the path of a JSON spec file',
  },
  ERR_PROMPT_OVER_BUDGET: {
    kind: 'error',
    meaning: 'the prompt exceeds `budget.max_input_tokens` after compaction stage C',
    hint: 'compaction only shrinks the dynamic tail; move context out of the tiers, files or history, or raise the budget',
  },
  ERR_PROMPT_TEMPLATE_MISSING: {
    kind: 'error',
    meaning: 'a shipped role, system or ledger-policy template is missing from the installed package',
    hint: 'reinstall PKG-COMPILER-001; its template files ship beside the compiler code',
  },
  ERR_PROMPT_SEGMENT_INVALID: {
    kind: 'error',
    meaning: 'a segment registered twice or of an unknown kind',
    hint: 'give every segment a unique id',
  },
  ERR_PROMPT_FORMAT_UNKNOWN: { kind: 'error', meaning: 'an unknown render format' },
  ERR_PROMPT_RENDER: {
    kind: 'error',
    meaning: 'an Anthropic body would begin with an assistant message',
    hint: 'start the first history after the developer zone with a user message, or set zones.user_instructions',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
