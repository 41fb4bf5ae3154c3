export { compilePrompt, type CompiledPrompt } from './compile.js';
export {
  validatePromptSpec,
  parsePromptSpec,
  TIER_NAMES,
  type PromptSpec,
  type TaskSpec,
  type TierName,
  type SpecProblem,
} from './spec.js';
export {
  SegmentRegistry,
  SEGMENT_KINDS,
  type PromptSegment,
  type SegmentKind,
  type CompiledSegments,
} from './segments.js';
export { hashPrefix, PREFIX_HASH_VERSION, type PrefixHashes, type PrefixInput } from './prefix.js';
export { buildDynamicTail, TAIL_SECTIONS } from './dynamic-tail.js';
export { compactTask, type CompactionStage, type CompactionStep } from './compaction.js';
export { placeBreakpoints, keptTierIndexes, MAX_BREAKPOINTS } from './breakpoints.js';
export { developerZone, userMetaZone, filterMetaBlocks, isMetaBlock, META_BLOCK_TAGS } from './zones.js';
export { formatFiles, fileTreeText } from './tiers.js';
export { estimateTokens, CHARS_PER_TOKEN } from './tokens.js';
export { ROLES, isRole, type Role } from './roles.js';
export { roleTemplate, baseSystemPrompt } from './templates.js';
export type { PromptMessage, MessageRole, MessageSection } from './messages.js';
export {
  renderAnthropic,
  DEFAULT_MAX_TOKENS,
  type AnthropicMessagesBody,
  type RenderOptions,
} from './render/anthropic.js';
export { renderOpenAIResponses, type OpenAIResponsesBody } from './render/openai-responses.js';
export { renderOpenAIChat, type OpenAIChatBody } from './render/openai-chat.js';
export { renderBody, PROMPT_FORMATS, type PromptFormat } from './render/index.js';
export * from './headers.js';
