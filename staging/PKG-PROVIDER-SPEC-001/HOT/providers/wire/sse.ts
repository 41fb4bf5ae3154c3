import { show } from '#kernel/errors.js';
import { ProviderError } from '../errors.js';

/**
 * Server-sent events, parsed incrementally (WHATWG rules: frames end at a blank line; `event:` and `data:`
 * fields, a leading space dropped; `\n`, `\r\n` or `\r` line ends; `:` comments ignored). Each frame keeps its
 * raw bytes, so a proxy forwards exactly what the upstream sent.
 */
export interface SseFrame {
  /** The frame as received, its terminating blank line included. */
  raw: string;
  event: string | null;
  /** The `data:` lines joined with `\n`; null when the frame had none (a comment or keep-alive). */
  data: string | null;
}

const FRAME_END = /\r\n\r\n|\n\n|\r\r/g;

export class SseParser {
  /**
   * Text not yet part of a frame, in the pieces it arrived in: joined only once a frame end has arrived, so a
   * long frame fed in small chunks costs linear time (searching one growing string would flatten it every chunk).
   */
  private pending: string[] = [];
  private pendingLength = 0;
  private readonly decoder = new TextDecoder('utf-8');

  /** Bytes held without a frame end: a stream that never ends a frame is cut off at `maxFrameBytes`. */
  private readonly maxFrameBytes: number;
  /** The upstream whose stream this is, named by the malformed-reply error an overlong frame raises. */
  private readonly providerId: string;

  constructor(options: { maxFrameBytes?: number; providerId?: string } = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? 16 * 1024 * 1024;
    this.providerId = options.providerId ?? 'upstream';
  }

  push(chunk: Uint8Array): SseFrame[] {
    const text = this.decoder.decode(chunk, { stream: true });
    // A frame end is at most 4 characters and may straddle the previous piece: look 3 back into it.
    let tail = '';
    for (let i = this.pending.length - 1; i >= 0 && tail.length < 3; i--) tail = (this.pending[i] ?? '') + tail;
    tail = tail.slice(-3);
    FRAME_END.lastIndex = 0;
    if (!FRAME_END.test(tail + text)) {
      if (text.length > 0) this.pending.push(text);
      this.pendingLength += text.length;
      this.checkBound();
      return [];
    }
    const buffer = this.pending.join('') + text;
    const frames: SseFrame[] = [];
    let start = 0;
    FRAME_END.lastIndex = Math.max(0, this.pendingLength - 3);
    for (;;) {
      const match = FRAME_END.exec(buffer);
      if (match === null) break;
      const end = match.index + match[0].length;
      frames.push(parseFrame(buffer.slice(start, end)));
      start = end;
    }
    const rest = buffer.slice(start);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingLength = rest.length;
    this.checkBound();
    return frames;
  }

  private checkBound(): void {
    // The upstream's fault after its 2xx, like an oversized body: malformed, possibly billed, never retried.
    if (this.pendingLength > this.maxFrameBytes)
      throw new ProviderError({
        kind: 'malformed_response',
        providerId: this.providerId,
        status: 200,
        afterSuccess: true,
        message: `provider ${show(this.providerId)} sent an SSE frame longer than ${this.maxFrameBytes} bytes`,
      });
  }

  /** What is left when the stream ends (a frame the upstream never finished). */
  rest(): string {
    return this.pending.join('') + this.decoder.decode();
  }
}

export function parseFrame(raw: string): SseFrame {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { raw, event, data: data.length === 0 ? null : data.join('\n') };
}
