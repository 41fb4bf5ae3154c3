import { resolve } from 'node:path';
import { CpError } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { compilePrompt } from '../../compiler/compile.js';
import { loadPromptSpec } from '../../compiler/load-spec.js';
import { PROMPT_FORMATS, renderBody } from '../../compiler/render/index.js';

export default defineCommand({
  name: 'compile',
  describe: 'print the compiled prompt and its hashes',
  options: {
    spec: {
      type: 'string',
      demandOption: true,
      describe: 'the prompt spec JSON file (HOT/schemas/prompt-spec.schema.json)',
    },
    format: {
      type: 'string',
      choices: PROMPT_FORMATS,
      default: 'neutral',
      describe: 'also render the request body for a provider',
    },
    model: { type: 'string', describe: "model for the request body (overrides the spec's model)" },
  },
  handler(args, ctx) {
    const spec = loadPromptSpec(resolve(ctx.cwd, args.spec));
    const compiled = compilePrompt(spec);
    const format = args.format;
    if (format !== 'neutral' && !args.model && !spec.model) {
      // Providers send a rendered body as is, and every provider API requires its model.
      throw new CpError(
        'ERR_USAGE',
        `--format ${format} needs a model: the spec has no "model" and no --model was given`,
        {
          hint: 'set "model" in the spec or pass --model MODEL',
        },
      );
    }
    const body = renderBody(compiled, format, args.model ? { model: args.model } : {});
    const value = { format, ...compiled, ...(body ? { body } : {}) };
    ctx.report(args, value, [
      `role: ${spec.role}   format: ${format}   messages: ${compiled.messages.length} (${compiled.stable_message_count} stable)`,
      `stable_prefix_hash: ${compiled.stable_prefix_hash}`,
      `dynamic_tail_hash:  ${compiled.dynamic_tail_hash}`,
      `full_prompt_hash:   ${compiled.full_prompt_hash}`,
      `cache_key:          ${compiled.cache_key}`,
      `breakpoints: ${compiled.breakpoints} (${compiled.breakpoint_tiers.join(', ')})${compiled.merged_tiers.length ? `; merged ${compiled.merged_tiers.map((m) => `${m.tier}→${m.into}`).join(', ')}` : ''}`,
      `tokens (~4 chars each): stable ${compiled.token_estimate.stable_prefix}, tail ${compiled.token_estimate.dynamic_tail}, total ${compiled.token_estimate.total}`,
      `compaction: ${compiled.compaction_stage}`,
      'use --json for the messages and the request body',
    ]);
    return EXIT.OK;
  },
});
