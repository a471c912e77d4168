/**
 * The text an event keeps of what a model or a tool wrote: up to `EVENT_TEXT_LIMIT` characters, its head
 * and tail beyond, and how long the whole is. The whole stays in the task's messages (what the loop
 * reads) and in its work directory; an event is for those who watch. One answer with four 10 MiB
 * `write_file` calls stored 84 MB of events, which every reader of the task's events then read whole.
 */
export const EVENT_TEXT_LIMIT = 32 * 1024;

/** `text` as an event keeps it, and its length when it was cut (else undefined). */
export function eventText(text: string): { text: string; length?: number } {
  if (text.length <= EVENT_TEXT_LIMIT) return { text };
  const head = text.slice(0, (EVENT_TEXT_LIMIT * 3) / 4);
  const tail = text.slice(text.length - EVENT_TEXT_LIMIT / 4);
  return {
    text: `${head}\n…[${text.length - head.length - tail.length} characters left out of this event; ${text.length} in all]…\n${tail}`,
    length: text.length,
  };
}

/** Reasoning as an event keeps it. */
export function keptText(text: string): { text: string; textLength?: number } {
  const kept = eventText(text);
  return { text: kept.text, ...(kept.length !== undefined ? { textLength: kept.length } : {}) };
}

/** A tool call's arguments as an event keeps them. */
export function keptArguments(text: string): { arguments: string; argumentsLength?: number } {
  const kept = eventText(text);
  return { arguments: kept.text, ...(kept.length !== undefined ? { argumentsLength: kept.length } : {}) };
}

/** A tool's output as an event keeps it. */
export function keptOutput(text: string): { output: string; outputLength?: number } {
  const kept = eventText(text);
  return { output: kept.text, ...(kept.length !== undefined ? { outputLength: kept.length } : {}) };
}
