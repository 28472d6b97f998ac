/**
 * @module An incremental Server-Sent Events parser (the WHATWG "event stream interpretation"): text in, in
 * chunks cut anywhere; frames out. LF, CRLF and CR line ends; `:` comments (heartbeats); multi-line `data`;
 * `id` and `retry` fields. Pure: no I/O, so the reconnecting stream and the tests drive it directly.
 */

/** One dispatched event. */
export interface SseFrame {
  /** The frame's own `id:` field, or undefined when it had none. */
  readonly id: string | undefined;
  /** The `event:` field, `message` when absent. */
  readonly event: string;
  /** The `data:` lines joined with `\n`. */
  readonly data: string;
}

/** Feeds text, collects frames; remembers the last `id` and `retry` as the spec's buffers do. */
export class SseParser {
  private buffer = "";
  /** A chunk ended in CR: a LF starting the next chunk belongs to it. */
  private afterCR = false;
  private started = false;
  private data: string[] = [];
  private event = "";
  private id: string | undefined = undefined;
  /** The last event id the stream set (persists across frames, as in EventSource). */
  lastEventId: string | undefined = undefined;
  /** The reconnection delay the server asked for with `retry:`, in ms. */
  retryMs: number | undefined = undefined;
  /** Comment lines seen (heartbeats). */
  comments = 0;

  /** Parses a chunk of text; returns the frames it completed. */
  push(chunk: string): SseFrame[] {
    // An empty chunk (a decoder holding half a character) must not forget a pending CR.
    if (chunk === "") return [];
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.afterCR && text.startsWith("\n")) text = text.slice(1);
    this.afterCR = false;
    this.buffer += text;
    const frames: SseFrame[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.buffer.slice(start, i), frames);
      if (c === 13) {
        if (i + 1 === this.buffer.length) this.afterCR = true;
        else if (this.buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return frames;
  }

  private line(line: string, frames: SseFrame[]): void {
    if (line === "") return this.dispatch(frames);
    if (line.startsWith(":")) {
      this.comments += 1;
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) {
          this.id = value;
          this.lastEventId = value;
        }
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // Unknown fields are ignored (spec).
        break;
    }
  }

  private dispatch(frames: SseFrame[]): void {
    // A frame without data is not dispatched; its id still counts (spec).
    if (this.data.length > 0) frames.push({ id: this.id, event: this.event === "" ? "message" : this.event, data: this.data.join("\n") });
    this.data = [];
    this.event = "";
    this.id = undefined;
  }
}
