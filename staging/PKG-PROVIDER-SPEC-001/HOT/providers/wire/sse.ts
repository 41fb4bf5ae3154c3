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

const FRAME_END = /\r\n\r\n|\n\n|\r\r/;

export class SseParser {
  private buffer = '';
  private readonly decoder = new TextDecoder('utf-8');

  /** Bytes held without a frame end: a stream that never ends a frame is cut off at `maxFrameBytes`. */
  constructor(private readonly maxFrameBytes = 16 * 1024 * 1024) {}

  push(chunk: Uint8Array): SseFrame[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const frames: SseFrame[] = [];
    for (;;) {
      const match = FRAME_END.exec(this.buffer);
      if (match === null) break;
      const end = match.index + match[0].length;
      frames.push(parseFrame(this.buffer.slice(0, end)));
      this.buffer = this.buffer.slice(end);
    }
    if (this.buffer.length > this.maxFrameBytes)
      throw new Error(`an SSE frame is longer than ${this.maxFrameBytes} bytes`);
    return frames;
  }

  /** What is left when the stream ends (a frame the upstream never finished). */
  rest(): string {
    return this.buffer + this.decoder.decode();
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
