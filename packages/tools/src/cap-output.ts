/**
 * Keeps the head and the tail of a long output with a marker between, so a model sees both how a
 * program started and how it ended. Used on whole strings and, through `OutputCollector`, on streams
 * without holding more than the limit in memory.
 */

export function capOutput(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const half = Math.floor(limit / 2);
  return joinCapped(text.slice(0, half), text.slice(text.length - half), text.length - 2 * half);
}

function joinCapped(head: string, tail: string, omitted: number): string {
  return `${head}\n\n[... ${omitted} characters omitted ...]\n\n${tail}`;
}

/** Collects a stream's text keeping at most `limit` characters: the first half and the last half. */
export class OutputCollector {
  private head = '';
  private tail = '';
  private total = 0;

  constructor(private readonly limit: number) {}

  push(chunk: string): void {
    this.total += chunk.length;
    const half = Math.floor(this.limit / 2);
    if (this.head.length < half) {
      const room = half - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (chunk) this.tail = (this.tail + chunk).slice(-half);
  }

  text(): string {
    const omitted = this.total - this.head.length - this.tail.length;
    return omitted > 0 ? joinCapped(this.head, this.tail, omitted) : this.head + this.tail;
  }
}
