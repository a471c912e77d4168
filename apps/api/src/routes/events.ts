/**
 * A task's events: Server-Sent Events that replay from `Last-Event-ID` (or `?after=`), follow live,
 * and close after the terminal event; or, with `Accept: application/json`, the events so far. With
 * `?descendants=true`, those of its whole tree, resumed with a tree's cursor (tree-follower.ts).
 */
import {
  isLiveDelta,
  type TaskStatus,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
  TreeCursorError,
  treeCursorOf,
} from '@agentq/contract';
import { Router, type Request, type Response } from 'express';
import { type EventHub, type LiveEvent, type StoredEvent, type TaskStore } from '@agentq/store';
import type { Metrics } from '@agentq/telemetry';
import { principalOf } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { sseFrame, SseStream, type SseFrame } from '../sse-stream.js';
import { treeEventPages } from '../task-tree.js';
import { TreeFollower } from '../tree-follower.js';
import { taskIdOf, visibleRecord } from './tasks.js';

const HEARTBEAT_MS = 15_000;
const HEARTBEAT = sseFrame(': keep-alive\n\n');

/**
 * How far a follower may fall behind. A replay waits for the client to read once this much waits to be
 * sent; live events are never held for it: once this much more waits, its stream is cut, and it resumes
 * with Last-Event-ID (EventSource does so by itself) from Redis, which holds every event. Without it, a
 * client that stops reading grew this process by every event of its task.
 */
const REPLAY_PAUSE_BYTES = 1 << 20;
const SLOW_FOLLOWER_BYTES = 8 << 20;

export function eventsRouter(options: {
  store: TaskStore;
  hub: EventHub;
  metrics: Metrics;
  /** Event streams a tenant may hold open on this process. */
  streamsOf: (tenant: string) => number;
}): Router {
  const { store, hub } = options;
  const router = Router();
  // Open streams per tenant, in this process (limits.sseStreams).
  const streams = new Map<string, number>();

  router.get('/v1/tasks/:id/events', async (request, response) => {
    const taskId = taskIdOf(request);
    const given = request.get('last-event-id') ?? request.query.after;
    const tree = descendantsOf(request.query.descendants) ? treeCursor(taskId, given) : undefined;
    const after = tree ? 0 : afterOf(given);
    const principal = principalOf(response);
    await visibleRecord(store, principal, taskId);
    if (request.method === 'HEAD') {
      // What a GET would start with, and nothing to follow.
      response
        .status(200)
        .type(
          request.accepts(['text/event-stream', 'application/json']) === 'application/json'
            ? 'application/json'
            : 'text/event-stream',
        )
        .end();
      return;
    }
    if (request.accepts(['text/event-stream', 'application/json']) === 'application/json') {
      const pages = tree
        ? treeEventPages({
            store,
            principal,
            taskId,
            ...tree,
            leftOut: (first) => response.setHeader('agentq-tree-left-out', first),
          })
        : store.eventPages(taskId, after);
      await sendJsonArray(request, response, pages);
      return;
    }

    // Counted before anything is awaited: streams opened at once cannot all pass the check.
    const { tenant } = principal;
    const open = streams.get(tenant) ?? 0;
    const limit = options.streamsOf(tenant);
    if (open >= limit) {
      throw new ApiError(
        'limit_reached',
        `Tenant ${tenant} already follows ${open} event streams on this API process, its limit (tenants.${tenant}.limits.sseStreams): close one, or read a task's events once with Accept: application/json.`,
        { tenant, streams: open, limit },
        5,
      );
    }
    streams.set(tenant, open + 1);
    const release = () => {
      const left = (streams.get(tenant) ?? 1) - 1;
      if (left > 0) streams.set(tenant, left);
      else streams.delete(tenant);
    };
    const stream = new SseStream(request, response, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    let unfollow = () => {};
    let ended = false;
    let heartbeat: NodeJS.Timeout | undefined;
    const end = (how?: 'cut') => {
      if (ended) return;
      ended = true;
      release();
      if (heartbeat) {
        options.metrics.sseClients.dec();
        clearInterval(heartbeat);
      }
      unfollow();
      // Cut: what waits to be sent is dropped with the connection.
      if (how === 'cut') stream.destroy();
      else stream.end();
    };
    const beat = () => {
      heartbeat = setInterval(() => stream.send(HEARTBEAT), HEARTBEAT_MS);
      options.metrics.sseClients.inc();
    };

    if (tree) {
      const follower = new TreeFollower({
        store,
        hub,
        principal,
        taskId,
        ...tree,
        stream,
        replayPauseBytes: REPLAY_PAUSE_BYTES,
        slowFollowerBytes: SLOW_FOLLOWER_BYTES,
        end,
      });
      unfollow = () => follower.close();
      beat();
      request.on('close', () => end());
      if (request.destroyed) end();
      else follower.start();
      return;
    }

    let lastSeq = after;
    let pending: StoredEvent[] | undefined = [];
    const send = (stored: StoredEvent) => {
      const { event } = stored;
      if (ended || event.seq <= lastSeq) return;
      lastSeq = event.seq;
      stream.send(frameOf(stored));
      // A subtask's end shows in its root's stream too; only the task's own end closes the stream.
      if (TERMINAL_EVENT_TYPES.has(event.type) && event.taskId === taskId) end();
      else if (stream.backlog > SLOW_FOLLOWER_BYTES) end('cut');
    };
    // Sent as the client reads them, however many there are.
    const replay = async (events: readonly StoredEvent[]) => {
      for (const event of events) {
        if (ended) return;
        send(event);
        if (!ended && stream.backlog > REPLAY_PAUSE_BYTES) await stream.drained();
      }
    };
    // Subscribe first and hold live events, then replay: nothing falls between the two.
    // A delta of an answer forming is live only: passed on as it comes once the replay is done (one
    // that comes during it is left out: the answer it is part of is stored whole).
    const live = (live: LiveEvent) => {
      if (!isLiveDelta(live.event)) return pending ? pending.push(live as StoredEvent) : send(live as StoredEvent);
      if (pending || ended) return;
      stream.send(sseFrame(`event: llm.delta\ndata: ${live.text}\n\n`));
      if (stream.backlog > SLOW_FOLLOWER_BYTES) end('cut');
    };
    unfollow = await hub.follow(taskId, live).catch((error: unknown) => {
      release();
      ended = true;
      throw error;
    });
    beat();
    request.on('close', () => end());
    // A client that went away while its stream was being set up: its 'close' came before the listener.
    if (request.destroyed) end();
    for await (const page of store.eventPages(taskId, after)) {
      if (ended) break;
      await replay(page);
    }
    const held = pending;
    pending = undefined;
    for (const event of held) send(event);
    // A task that already ended (a client resuming after its last event): send what is left, and close.
    const record = await store.getRecord(taskId);
    if (!ended && TERMINAL_STATUSES.has(record?.status as TaskStatus)) {
      for await (const page of store.eventPages(taskId, lastSeq)) {
        if (ended) break;
        await replay(page);
      }
      end();
    }
  });

  return router;
}

/**
 * The events as one JSON array, written a page at a time as the client reads them (their JSON text as
 * stored, never parsed and written out again); a client that goes away stops the read.
 */
async function sendJsonArray(
  request: Request,
  response: Response,
  pages: AsyncGenerator<StoredEvent[]>,
): Promise<void> {
  response.status(200).type('application/json');
  let gone = false;
  request.once('close', () => (gone = true));
  let separator = '[';
  for await (const page of pages) {
    if (gone) return void (await pages.return(undefined));
    if (!page.length) continue;
    const more = response.write(`${separator}${page.map((stored) => stored.text).join(',')}`);
    separator = ',';
    if (!more) await drained(response);
  }
  response.end(separator === '[' ? '[]' : ']');
}

/** Resolves once the response took what was written, or closed. */
function drained(response: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done).off('close', done);
      resolve();
    };
    response.on('drain', done).on('close', done);
  });
}

/** `?descendants=`: `true` follows the task's tree; `false` or nothing, the task alone. */
function descendantsOf(value: unknown): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new ApiError(
    'invalid_request',
    `descendants must be true or false; got ${JSON.stringify(value).slice(0, 40)}.`,
  );
}

/** A tree's cursor (`Last-Event-ID` or `?after=`, contract's tree-stream.ts), and the bytes it takes. */
function treeCursor(taskId: string, value: unknown): { cursor: Map<string, number>; cursorBytes: number } {
  if (value === undefined) return { cursor: new Map(), cursorBytes: 0 };
  try {
    if (typeof value !== 'string') throw new TreeCursorError('must be given once');
    return { cursor: treeCursorOf(taskId, value), cursorBytes: value.length };
  } catch (error) {
    if (!(error instanceof TreeCursorError)) throw error;
    throw new ApiError(
      'invalid_request',
      `Last-Event-ID (or after) of a tree's stream ${error.message}: send the \`id:\` of the last message read, such as 12,c3.1:5 (the task's seq, then each descendant's).`,
    );
  }
}

/** `Last-Event-ID` or `?after=`: the seq of an event already seen, a whole number (0: from the start). */
function afterOf(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  throw new ApiError(
    'invalid_request',
    `Last-Event-ID (or after) must be the seq of an event already seen, a whole number such as 12; got ${JSON.stringify(value).slice(0, 40)}.`,
  );
}

/**
 * An event's SSE frame, built and encoded once however many clients follow it (its JSON text is
 * passed on as stored): each client's write is then a copy of bytes, not another UTF-8 encoding.
 */
const frames = new WeakMap<StoredEvent, SseFrame>();
function frameOf(stored: StoredEvent): SseFrame {
  let frame = frames.get(stored);
  if (frame === undefined) {
    frame = sseFrame(`id: ${stored.event.seq}\nevent: ${stored.event.type}\ndata: ${stored.text}\n\n`);
    frames.set(stored, frame);
  }
  return frame;
}
