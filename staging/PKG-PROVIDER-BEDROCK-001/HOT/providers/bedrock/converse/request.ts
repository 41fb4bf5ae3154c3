// An Anthropic Messages request as a Bedrock Converse request: every field mapped exactly, or refused by name.
import type { JsonObject } from '#providers/json.js';
import { arrayAt, objectAt, onlyKnown, refuse, shown, stringAt } from '#providers/translate/refusal.js';
import { messagesFields } from '#providers/translate/messages-fields.js';

type Block = Record<string, unknown>;

const TOP = messagesFields();

/** Converse's image formats: the media type's subtype (`image/png` → `png`). */
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
/** Converse's `requestMetadata` values are at most 256 characters. */
const MAX_METADATA_VALUE = 256;

/**
 * The Converse body for a Messages body (the model goes in the URL, streaming is the path's choice). `claude`: the
 * model is Anthropic's, which takes extended thinking through `additionalModelRequestFields` as AWS documents it.
 */
export function messagesToConverse(body: JsonObject, claude = false): Record<string, unknown> {
  onlyKnown(body, TOP, '');
  const documents: Documents = { count: 0 };
  const out: Record<string, unknown> = {
    messages: arrayAt(body.messages, 'messages').map((m, i) => message(m, `messages[${i}]`, documents)),
  };
  if (body.system !== undefined) out.system = system(body.system);
  const inference: Record<string, unknown> = {};
  if (body.max_tokens !== undefined) inference.maxTokens = body.max_tokens;
  if (body.temperature !== undefined) inference.temperature = body.temperature;
  if (body.top_p !== undefined) inference.topP = body.top_p;
  if (body.stop_sequences !== undefined)
    inference.stopSequences = arrayAt(body.stop_sequences, 'stop_sequences').map((s, i) =>
      stringAt(s, `stop_sequences[${i}]`),
    );
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
  const tools = toolConfig(body);
  if (tools !== null) out.toolConfig = tools;
  if (body.metadata !== undefined) {
    const metadata = objectAt(body.metadata, 'metadata');
    onlyKnown(metadata, new Set(['user_id']), 'metadata');
    if (metadata.user_id !== undefined && metadata.user_id !== null) {
      const user = stringAt(metadata.user_id, 'metadata.user_id');
      if (user.length > MAX_METADATA_VALUE)
        refuse('metadata.user_id', `Converse request metadata values are at most ${MAX_METADATA_VALUE} characters`);
      out.requestMetadata = { user_id: user };
    }
  }
  const thinking = thinkingFields(body.thinking, claude);
  if (thinking !== null) out.additionalModelRequestFields = { thinking };
  return out;
}

/** Anthropic's `thinking` as Claude takes it in `additionalModelRequestFields`; null when off or absent. */
function thinkingFields(value: unknown, claude: boolean): Record<string, unknown> | null {
  if (value === undefined) return null;
  const thinking = objectAt(value, 'thinking');
  if (thinking.type === 'disabled') return null;
  if (!claude) refuse('thinking', "Anthropic's extended thinking reaches only Claude models through Converse");
  onlyKnown(thinking, new Set(['type', 'budget_tokens']), 'thinking');
  if (thinking.type !== 'enabled')
    refuse('thinking.type', `Converse documents thinking type enabled, got ${shown(thinking.type)}`);
  const budget = thinking.budget_tokens;
  if (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget < 1)
    refuse('thinking.budget_tokens', `a positive integer is required, got ${shown(budget)}`);
  return { type: 'enabled', budget_tokens: budget };
}

/** A cache breakpoint: Anthropic marks the block, Converse follows it with a `cachePoint` block. */
function cachePoint(block: JsonObject, at: string): Block[] {
  if (block.cache_control === undefined) return [];
  const control = objectAt(block.cache_control, `${at}.cache_control`);
  onlyKnown(control, new Set(['type']), `${at}.cache_control`);
  if (control.type !== 'ephemeral')
    refuse(`${at}.cache_control.type`, `only ephemeral cache breakpoints translate, got ${shown(control.type)}`);
  return [{ cachePoint: { type: 'default' } }];
}

function system(value: unknown): Block[] {
  if (typeof value === 'string') return [{ text: value }];
  return arrayAt(value, 'system').flatMap((b, i) => {
    const at = `system[${i}]`;
    const block = objectAt(b, at);
    onlyKnown(block, new Set(['type', 'text', 'cache_control']), at);
    if (block.type !== 'text') refuse(`${at}.type`, `only text system blocks translate, got ${shown(block.type)}`);
    return [{ text: stringAt(block.text, `${at}.text`) }, ...cachePoint(block, at)];
  });
}

/** The documents of the request being mapped, numbered in order for the ones with no title. */
interface Documents {
  count: number;
}

function message(value: unknown, at: string, documents: Documents): Block {
  const msg = objectAt(value, at);
  onlyKnown(msg, new Set(['role', 'content']), at);
  if (msg.role !== 'user' && msg.role !== 'assistant')
    refuse(`${at}.role`, `a role of user or assistant is required, got ${shown(msg.role)}`);
  const content =
    typeof msg.content === 'string'
      ? [{ text: msg.content }]
      : arrayAt(msg.content, `${at}.content`).flatMap((b, k) => contentBlock(b, `${at}.content[${k}]`, documents));
  return { role: msg.role, content };
}

function contentBlock(value: unknown, at: string, documents: Documents): Block[] {
  const block = objectAt(value, at);
  const type = block.type;
  if (type === 'text') {
    onlyKnown(block, new Set(['type', 'text', 'cache_control']), at);
    return [{ text: stringAt(block.text, `${at}.text`) }, ...cachePoint(block, at)];
  }
  if (type === 'image') {
    onlyKnown(block, new Set(['type', 'source', 'cache_control']), at);
    return [image(block.source, `${at}.source`), ...cachePoint(block, at)];
  }
  if (type === 'tool_use') {
    onlyKnown(block, new Set(['type', 'id', 'name', 'input', 'cache_control']), at);
    const toolUse = {
      toolUseId: stringAt(block.id, `${at}.id`),
      name: stringAt(block.name, `${at}.name`),
      input: objectAt(block.input, `${at}.input`),
    };
    return [{ toolUse }, ...cachePoint(block, at)];
  }
  if (type === 'tool_result') return [toolResult(block, at), ...cachePoint(block, at)];
  if (type === 'document') return [document(block, at, documents), ...cachePoint(block, at)];
  if (type === 'thinking') {
    // Sent back unmodified with its signature, as Converse requires of a reasoning block in a later turn.
    onlyKnown(block, new Set(['type', 'thinking', 'signature']), at);
    const text = stringAt(block.thinking, `${at}.thinking`);
    const signature = block.signature === undefined ? {} : { signature: stringAt(block.signature, `${at}.signature`) };
    return [{ reasoningContent: { reasoningText: { text, ...signature } } }];
  }
  if (type === 'redacted_thinking') {
    onlyKnown(block, new Set(['type', 'data']), at);
    return [{ reasoningContent: { redactedContent: stringAt(block.data, `${at}.data`) } }];
  }
  return refuse(`${at}.type`, `a ${shown(type)} block has no Converse equivalent`);
}

/** DocumentBlock's name: letters, digits, single whitespace, hyphens, parentheses, square brackets; 1-200 long. */
const DOCUMENT_NAME = /^(?:[A-Za-z0-9()[\]-]|\s(?!\s)){1,200}$/;

/**
 * A document: a base64 PDF as `{format: "pdf", source: {bytes}}`, plain text as `{format: "txt", source: {text}}`,
 * its `title` as the name Converse requires (a neutral `Document <n>`, by its place in the request, when it has none)
 * and its `context` as is. Citations would come back as blocks Messages cannot carry here, so enabling them is refused.
 */
function document(block: JsonObject, at: string, documents: Documents): Block {
  onlyKnown(block, new Set(['type', 'source', 'title', 'context', 'citations', 'cache_control']), at);
  const source = objectAt(block.source, `${at}.source`);
  onlyKnown(source, new Set(['type', 'media_type', 'data']), `${at}.source`);
  let converted: Block;
  if (source.type === 'base64' && source.media_type === 'application/pdf')
    converted = { format: 'pdf', source: { bytes: stringAt(source.data, `${at}.source.data`) } };
  else if (source.type === 'text' && source.media_type === 'text/plain')
    converted = { format: 'txt', source: { text: stringAt(source.data, `${at}.source.data`) } };
  else
    return refuse(
      `${at}.source.type`,
      `Converse takes a base64 PDF or plain text document, got ${shown(source.type)} ${shown(source.media_type)}`,
    );
  const title = block.title === undefined || block.title === null ? null : stringAt(block.title, `${at}.title`);
  if (title !== null && !DOCUMENT_NAME.test(title))
    refuse(`${at}.title`, 'a Converse document name takes letters, digits, single spaces, - ( ) [ ], up to 200');
  documents.count += 1;
  const out: Block = { name: title ?? `Document ${documents.count}`, ...converted };
  if (block.context !== undefined && block.context !== null) out.context = stringAt(block.context, `${at}.context`);
  if (block.citations !== undefined) {
    const citations = objectAt(block.citations, `${at}.citations`);
    onlyKnown(citations, new Set(['enabled']), `${at}.citations`);
    if (citations.enabled === true)
      refuse(`${at}.citations`, 'cited replies come back as Converse citation blocks Messages cannot carry here');
  }
  return { document: out };
}

/** A base64 image: Converse takes the bytes (base64 in its JSON) and the format; URLs and files do not translate. */
function image(value: unknown, at: string): Block {
  const source = objectAt(value, at);
  onlyKnown(source, new Set(['type', 'media_type', 'data']), at);
  if (source.type !== 'base64') refuse(`${at}.type`, `only base64 images translate, got ${shown(source.type)}`);
  const media = stringAt(source.media_type, `${at}.media_type`);
  const format = media.startsWith('image/') ? media.slice('image/'.length) : '';
  if (!IMAGE_FORMATS.has(format))
    refuse(`${at}.media_type`, `Converse takes png, jpeg, gif or webp, got ${shown(media)}`);
  return { image: { format, source: { bytes: stringAt(source.data, `${at}.data`) } } };
}

function toolResult(block: JsonObject, at: string): Block {
  onlyKnown(block, new Set(['type', 'tool_use_id', 'content', 'is_error', 'cache_control']), at);
  const content =
    block.content === undefined
      ? []
      : typeof block.content === 'string'
        ? [{ text: block.content }]
        : arrayAt(block.content, `${at}.content`).map((c, k) => {
            const inner = objectAt(c, `${at}.content[${k}]`);
            if (inner.type === 'text') {
              onlyKnown(inner, new Set(['type', 'text']), `${at}.content[${k}]`);
              return { text: stringAt(inner.text, `${at}.content[${k}].text`) };
            }
            if (inner.type === 'image') {
              onlyKnown(inner, new Set(['type', 'source']), `${at}.content[${k}]`);
              return image(inner.source, `${at}.content[${k}].source`);
            }
            return refuse(`${at}.content[${k}].type`, `a ${shown(inner.type)} tool result has no Converse equivalent`);
          });
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    refuse(`${at}.is_error`, `a boolean is required, got ${shown(block.is_error)}`);
  return {
    toolResult: {
      toolUseId: stringAt(block.tool_use_id, `${at}.tool_use_id`),
      content,
      ...(block.is_error === true ? { status: 'error' } : {}),
    },
  };
}

/** The tools and tool choice; null when the request has neither (an empty tool list is no tools). */
function toolConfig(body: JsonObject): Record<string, unknown> | null {
  const tools = arrayAt(body.tools ?? [], 'tools').flatMap((t, i) => {
    const at = `tools[${i}]`;
    const tool = objectAt(t, at);
    onlyKnown(tool, new Set(['type', 'name', 'description', 'input_schema', 'cache_control']), at);
    if (tool.type !== undefined && tool.type !== 'custom')
      refuse(`${at}.type`, `the server tool ${shown(tool.type)} has no Converse equivalent`);
    const spec: Record<string, unknown> = {
      name: stringAt(tool.name, `${at}.name`),
      inputSchema: { json: objectAt(tool.input_schema, `${at}.input_schema`) },
    };
    if (tool.description !== undefined) spec.description = stringAt(tool.description, `${at}.description`);
    return [{ toolSpec: spec }, ...cachePoint(tool, at)];
  });
  const out: Record<string, unknown> = { tools };
  if (body.tool_choice !== undefined) {
    const choice = objectAt(body.tool_choice, 'tool_choice');
    onlyKnown(choice, new Set(['type', 'name', 'disable_parallel_tool_use']), 'tool_choice');
    if (choice.disable_parallel_tool_use === true)
      refuse('tool_choice.disable_parallel_tool_use', 'Converse has no switch for parallel tool calls');
    if (choice.type === 'auto') out.toolChoice = { auto: {} };
    else if (choice.type === 'any') out.toolChoice = { any: {} };
    else if (choice.type === 'tool') out.toolChoice = { tool: { name: stringAt(choice.name, 'tool_choice.name') } };
    else refuse('tool_choice.type', `Converse has no tool choice ${shown(choice.type)}`);
  }
  if (tools.length === 0) {
    if (body.tool_choice === undefined) return null;
    refuse('tool_choice', 'a tool choice without tools has no Converse equivalent');
  }
  return out;
}
