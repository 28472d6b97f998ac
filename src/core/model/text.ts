/** @module Text the runtime writes into bounded fields. */

/** `text` cut to at most `max` characters, an ellipsis marking the cut. */
export function clipText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
