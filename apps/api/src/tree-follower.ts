/**
 * A task's tree followed as one SSE stream (`GET /v1/tasks/:id/events?descendants=true`). Each task is
 * followed as the plain stream follows one: subscribed first, its events replayed after its seq in the
 * cursor, then live; the held live events go out after the replay, so none falls between. Its children
 * are found in its record (`children`) once its replay is done, and again whenever one of its events
 * may have started some (a plan, a `delegate` call): breadth-first, one task at a time, within the
 * tree's bounds (task-tree.ts). Each message's `id:` is the cursor of the whole tree after it. The
 * stream ends once every task followed has ended and a last look found no child not followed.
 */
import {
  isLiveDelta,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
  treeCursorText,
  TREE_TASK_LIMIT,
  type EventType,
  type TreeLimitNotice,
} from '@agentq/contract';
import type { EventHub, LiveEvent, StoredEvent, TaskStore } from '@agentq/store';
import { canSee, type Principal } from './api-auth.js';
import { sseFrame, type SseStream } from './sse-stream.js';
import { isOwnEvent, TREE_FIELDS, TreeBounds } from './task-tree.js';

/** Events after which a task may have children not seen yet. */
const MAY_START_CHILDREN: ReadonlySet<EventType> = new Set(['plan.created', 'subtask.queued', 'task.waiting']);

interface Followed {
  ended: boolean;
  /** Live events held while its replay runs; undefined once it ran. */
  held: LiveEvent[] | undefined;
  unfollow?: () => void;
}

export interface TreeFollowerOptions {
  store: TaskStore;
  hub: EventHub;
  principal: Principal;
  taskId: string;
  /** Where the reader is: each task's seq (treeCursorOf), and the bytes that cursor takes. */
  cursor: Map<string, number>;
  cursorBytes: number;
  stream: SseStream;
  /** A replay waits for the client once this much waits to be sent. */
  replayPauseBytes: number;
  /** Past this much unsent, the stream is cut (the client resumes from its Last-Event-ID). */
  slowFollowerBytes: number;
  /** Ends the response: `cut` drops what waits to be sent. Called once. */
  end: (how?: 'cut') => void;
}

export class TreeFollower {
  private readonly followed = new Map<string, Followed>();
  /** Each task's seq read to: the cursor given, then what was sent. */
  private readonly seqs: Map<string, number>;
  private readonly bounds: TreeBounds;
  private readonly toFollow: string[] = [];
  private readonly known = new Set<string>();
  /** Tasks whose `children` to read again. */
  private readonly dirty = new Set<string>();
  private limited = false;
  private running = false;
  private again = false;
  private closed = false;

  constructor(private readonly options: TreeFollowerOptions) {
    this.seqs = new Map(options.cursor);
    this.bounds = new TreeBounds(options.taskId, options.cursorBytes);
  }

  /** Starts following (the task itself was found visible by the route). */
  start(): void {
    this.known.add(this.options.taskId);
    this.toFollow.push(this.options.taskId);
    this.kick();
  }

  /** Stops every subscription (the response ended). */
  close(): void {
    this.closed = true;
    for (const followed of this.followed.values()) followed.unfollow?.();
  }

  private kick(): void {
    // Redis away mid-stream: the client resumes from its Last-Event-ID.
    void this.pump().catch(() => this.options.end('cut'));
  }

  /** One at a time: follows the tasks found, reads the children of the dirty ones, ends when all ended. */
  private async pump(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        while (!this.closed && (this.toFollow.length || this.dirty.size)) {
          const next = this.toFollow.shift();
          if (next !== undefined) await this.follow(next);
          else {
            const ids = [...this.dirty];
            this.dirty.clear();
            await this.findChildren(ids);
          }
        }
        if (this.closed || ![...this.followed.values()].every((followed) => followed.ended)) continue;
        // A child listed after the last event read of its parent: one more look at every task's children.
        await this.findChildren([...this.followed.keys()]);
        if (!this.toFollow.length) return this.options.end();
        this.again = true;
      } while (this.again && !this.closed);
    } finally {
      this.running = false;
    }
  }

  private async follow(taskId: string): Promise<void> {
    const { store, hub, principal } = this.options;
    const seen = await store.getRecordFields(taskId, ['id', 'rootId', 'agent', 'status', 'tenant']);
    // A child is its parent's tenant's: checked, not assumed.
    if (this.closed || !seen || !canSee(principal, seen)) return;
    const followed: Followed = { ended: false, held: [] };
    this.followed.set(taskId, followed);
    followed.unfollow = await hub.follow(taskId, (live) => this.live(taskId, followed, live));
    if (this.closed) return followed.unfollow();
    await this.replay(taskId);
    const held = followed.held ?? [];
    followed.held = undefined;
    for (const live of held) this.send(taskId, live as StoredEvent);
    const record = await store.getRecordFields(taskId, TREE_FIELDS);
    if (!record) followed.ended = true;
    else if (TERMINAL_STATUSES.has(record.status) && !followed.ended) {
      // Ended before it was followed (a reader resuming after its last event): what is left, and it is done.
      await this.replay(taskId);
      followed.ended = true;
    }
    this.adopt(record?.children ?? [], taskId);
  }

  private async replay(taskId: string): Promise<void> {
    const { store, stream } = this.options;
    for await (const page of store.eventPages(taskId, this.seqs.get(taskId) ?? 0)) {
      for (const stored of page) {
        if (this.closed) return;
        this.send(taskId, stored);
        if (!this.closed && stream.backlog > this.options.replayPauseBytes) await stream.drained();
      }
      if (this.closed) return;
    }
  }

  private async findChildren(ids: readonly string[]): Promise<void> {
    const records = await Promise.all(ids.map((id) => this.options.store.getRecordFields(id, TREE_FIELDS)));
    records.forEach((record, index) => this.adopt(record?.children ?? [], ids[index]!));
  }

  /** Queues the children not followed yet, while the bounds have room; says once when they have none. */
  private adopt(children: readonly string[], parentId: string): void {
    for (const child of children) {
      if (this.known.has(child) || !child.startsWith(`${parentId}.`) || this.limited) continue;
      if (!this.bounds.take(child, this.seqs.has(child))) {
        this.limited = true;
        const notice: TreeLimitNotice = { type: 'tree.limit', limit: TREE_TASK_LIMIT, taskId: child };
        // No `id:`: the cursor stays the last event's.
        this.options.stream.send(sseFrame(`event: tree.limit\ndata: ${JSON.stringify(notice)}\n\n`));
        return;
      }
      this.known.add(child);
      this.toFollow.push(child);
    }
  }

  private live(taskId: string, followed: Followed, live: LiveEvent): void {
    if (this.closed) return;
    if (!isLiveDelta(live.event)) {
      if (followed.held) followed.held.push(live);
      else this.send(taskId, live as StoredEvent);
      return;
    }
    // A delta during its task's replay is left out: the answer it is part of is stored whole.
    if (followed.held) return;
    this.options.stream.send(sseFrame(`event: llm.delta\ndata: ${live.text}\n\n`));
    this.cutIfSlow();
  }

  private send(taskId: string, stored: StoredEvent): void {
    if (this.closed) return;
    const { seq, type } = stored.event;
    const own = isOwnEvent(stored, taskId);
    const followed = this.followed.get(taskId)!;
    // Its end counts even when the cursor said it was read (one written past it): the tree ends without it.
    const ends = own && TERMINAL_EVENT_TYPES.has(type) && !followed.ended;
    if (ends) followed.ended = true;
    const fresh = seq > (this.seqs.get(taskId) ?? 0);
    if (fresh) {
      this.seqs.set(taskId, seq);
      // Another task's end repeated in this one's stream (a subtask's, in its root's): its own stream has it.
      if (own) {
        const id = treeCursorText(this.options.taskId, this.seqs);
        this.options.stream.send(sseFrame(`id: ${id}\nevent: ${type}\ndata: ${stored.text}\n\n`));
      }
      if (MAY_START_CHILDREN.has(type)) this.dirty.add(taskId);
    }
    if (ends || (fresh && MAY_START_CHILDREN.has(type))) this.kick();
    this.cutIfSlow();
  }

  private cutIfSlow(): void {
    if (!this.closed && this.options.stream.backlog > this.options.slowFollowerBytes) this.options.end('cut');
  }
}
