import { CpError, show } from '#kernel/errors.js';

/** Segment kinds in prompt order: the stable kinds first, `dynamic` always last. */
export const SEGMENT_KINDS = ['tools', 'system', 'examples', 'dynamic'] as const;
export type SegmentKind = (typeof SEGMENT_KINDS)[number];

export interface PromptSegment {
  id: string;
  kind: SegmentKind;
  content: string;
}

export interface CompiledSegments {
  /** Every segment's content in canonical order, joined by a blank line. */
  text: string;
  /** The text up to (not including) the first dynamic segment; `text` starts with it. */
  stablePrefix: string;
  segments: readonly PromptSegment[];
}

export const SEGMENT_SEPARATOR = '\n\n';

/**
 * Orders prompt segments by kind (tools, system, examples, dynamic), then by registration order, so the
 * compiled text never depends on the order callers happened to register kinds in.
 */
export class SegmentRegistry {
  private readonly segments: PromptSegment[] = [];
  private readonly ids = new Set<string>();

  register(segment: PromptSegment): this {
    if (!(SEGMENT_KINDS as readonly string[]).includes(segment.kind)) {
      throw new CpError(
        'ERR_PROMPT_SEGMENT_INVALID',
        `segment ${show(segment.id)} has unknown kind ${show(segment.kind)}`,
        {
          hint: `use one of ${SEGMENT_KINDS.join(', ')}`,
        },
      );
    }
    if (this.ids.has(segment.id)) {
      throw new CpError('ERR_PROMPT_SEGMENT_INVALID', `segment id ${show(segment.id)} is registered twice`, {
        hint: 'give every segment a unique id',
      });
    }
    this.ids.add(segment.id);
    this.segments.push({ ...segment });
    return this;
  }

  ordered(): PromptSegment[] {
    const rank = (kind: SegmentKind): number => SEGMENT_KINDS.indexOf(kind);
    return this.segments
      .map((segment, index) => ({ segment, index }))
      .sort((a, b) => rank(a.segment.kind) - rank(b.segment.kind) || a.index - b.index)
      .map(({ segment }) => segment);
  }

  compile(): CompiledSegments {
    const ordered = this.ordered().filter((segment) => segment.content.length > 0);
    const stable = ordered.filter((segment) => segment.kind !== 'dynamic');
    return {
      text: ordered.map((segment) => segment.content).join(SEGMENT_SEPARATOR),
      stablePrefix: stable.map((segment) => segment.content).join(SEGMENT_SEPARATOR),
      segments: ordered,
    };
  }
}
