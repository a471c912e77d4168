/**
 * A task's events read in pages, for a reader that sends them on (the API): never the whole log in
 * memory, and the thread given back between pages. The compacted events are read a megabyte at a time
 * (GETRANGE) and inflated as a stream (off this thread, in zlib's pool); the list is read with LRANGE a
 * page at a time. An event is parsed only if its reader asks (a JSON reply sends its text as stored). Six parallel reads of one task's 84 MB of events held another tenant's `GET /v1/me` up to
 * 14.2 s and grew the API by 640 MB when each read inflated and parsed the whole log at once.
 *
 * A compaction between two pages (the list moves into the packed string) shows as a page that does not
 * start at the next seq, and a packed string written again while it is read (a run's end writes it
 * whole) as another length: the rest is then read in one go, by the script that reads both at once.
 */
import { EventsChangedError } from './store-errors.js';
import { createInflateRaw } from 'node:zlib';
import type { Redis } from 'ioredis';
import type { TaskEvent } from '@agentq/contract';
import { luaScript } from './lua-script.js';
import { OPEN_STREAM, readEvents, type EventKeys, type StoredEvent } from './task-events.js';

/** Events a page, at most; and a page of the compacted events ends once it holds this much text. */
export const EVENT_PAGE = 256;
const PAGE_TEXT = 128 * 1024;

/** The compacted string is read this much at a time (GETRANGE). */
const PACKED_CHUNK = 64 * 1024;

const HEAD = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'events-head',
  keys: ['packedKey', 'listKey'],
  args: [],
});

/** Events with `seq` greater than `afterSeq`, oldest first, a page at a time. */
export async function* eventPages(
  options: { redis: Redis } & EventKeys & { afterSeq?: number },
): AsyncGenerator<StoredEvent[]> {
  let after = options.afterSeq ?? 0;
  const redis = options.redis;
  const [packedLength, listStart] = (await HEAD.runBuffer(redis, {
    keys: { packedKey: options.packedKey, listKey: options.key },
    args: {},
  })) as [number, number];
  // What is left after `after`, read at once by the script that reads both.
  const rest = async function* () {
    const events = await readEvents({ ...options, afterSeq: after });
    if (events.length) yield events;
  };
  const newer = (events: StoredEvent[]) => {
    const kept = events.filter((stored) => seqOf(stored) > after);
    if (kept.length) after = seqOf(kept.at(-1)!);
    return kept;
  };
  if (packedLength) {
    try {
      for await (const page of packedPages(options.redis, options.packedKey, packedLength)) {
        const kept = newer(page);
        if (kept.length) yield kept;
      }
    } catch {
      // Compacted again meanwhile (a retried task's events joined it).
      yield* rest();
      return;
    }
  }
  if (!listStart) return;
  let index = Math.max(0, after - listStart + 1);
  for (;;) {
    const raw = await options.redis.lrangeBuffer(options.key, index, index + EVENT_PAGE - 1);
    const page = raw.map((element) => stored(element.toString('utf8')));
    // Gone, or not where it was: compacted meanwhile (an ended list is kept until it is).
    const moved = page.length ? page[0]!.seq > after + 1 : (await options.redis.exists(options.key)) === 0;
    if (moved) {
      yield* rest();
      return;
    }
    const kept = newer(page);
    if (kept.length) yield kept;
    if (raw.length < EVENT_PAGE) return;
    index += raw.length;
  }
}

/** The compacted events, read a chunk at a time and inflated as a stream, a page of lines at a time. */
async function* packedPages(redis: Redis, key: string, length: number): AsyncGenerator<ReadEvent[]> {
  const inflate = createInflateRaw(OPEN_STREAM);
  const feed = async () => {
    for (let from = 0; from < length; from += PACKED_CHUNK) {
      const chunk = await redis.getrangeBuffer(key, from, Math.min(from + PACKED_CHUNK, length) - 1);
      if (chunk.length === 0) throw new EventsChangedError('the compacted events changed while they were read');
      if (!inflate.write(chunk)) await new Promise((resolve) => inflate.once('drain', resolve));
    }
    // Written again meanwhile (a run's end writes its task's packed string whole, longer): what was read
    // is a prefix of the new one, whose last line may be cut. The lines before it are the task's; the
    // rest is read again from after them.
    if ((await redis.strlen(key)) !== length)
      throw new EventsChangedError('the packed events changed while they were read');
    inflate.end();
  };
  const fed = feed().catch((error: unknown) => inflate.destroy(error as Error));
  let rest = '';
  let page: ReadEvent[] = [];
  let pageText = 0;
  for await (const chunk of inflate as AsyncIterable<Buffer>) {
    const text = rest + chunk.toString('utf8');
    const cut = text.lastIndexOf('\n');
    rest = cut === -1 ? text : text.slice(cut + 1);
    if (cut === -1) continue;
    for (const line of lines(text.slice(0, cut))) {
      page.push(line);
      pageText += line.text.length;
      if (page.length >= EVENT_PAGE || pageText >= PAGE_TEXT) {
        yield page;
        page = [];
        pageText = 0;
      }
    }
  }
  await fed;
  page.push(...lines(rest));
  if (page.length) yield page;
}

function seqOf(stored: StoredEvent): number {
  return stored instanceof ReadEvent ? stored.seq : stored.event.seq;
}

function lines(text: string): ReadEvent[] {
  return text.split('\n').filter(Boolean).map(stored);
}

/**
 * An event as read: its text, parsed only when a reader asks for the event (a JSON reply passes the text
 * on as it is); its seq is read off the envelope's start, where the scripts write it.
 */
class ReadEvent implements StoredEvent {
  private parsed: TaskEvent | undefined;
  readonly seq: number;

  constructor(readonly text: string) {
    const seq = /^\{"id":"[^"]*","seq":(\d+)/.exec(text)?.[1];
    this.seq = seq === undefined ? this.event.seq : Number(seq);
  }

  get event(): TaskEvent {
    return (this.parsed ??= JSON.parse(this.text) as TaskEvent);
  }
}

function stored(text: string): ReadEvent {
  return new ReadEvent(text);
}
