/**
 * What of a task's tree one reader reads: the task and its descendants, found through each record's
 * `children`, breadth-first, only those the caller may see, at most TREE_TASK_LIMIT tasks and no more
 * than their cursor can name in TREE_CURSOR_BYTES (tree-stream.ts in the contract). Used by the JSON
 * answer of `GET /v1/tasks/:id/events?descendants=true`; the SSE follower (tree-follower.ts) finds the
 * same tasks as they are started.
 */
import { cursorBytesOf, TREE_CURSOR_BYTES, TREE_TASK_LIMIT } from '@agentq/contract';
import type { StoredEvent, TaskStore } from '@agentq/store';
import { canSee, type Principal } from './api-auth.js';

/** How many tasks, and how many bytes of cursor, a reader has taken of its tree's bounds. */
export class TreeBounds {
  private tasks = 1;

  constructor(
    private readonly taskId: string,
    /** Bytes the reader's own cursor already takes (what it names, whether in the tree or not). */
    private cursorBytes: number,
  ) {}

  /** Takes room for `descendantId`; false when it does not fit (nor will any other). */
  take(descendantId: string, named: boolean): boolean {
    const bytes = named ? 0 : cursorBytesOf(this.taskId, descendantId);
    if (this.tasks >= TREE_TASK_LIMIT || this.cursorBytes + bytes > TREE_CURSOR_BYTES) return false;
    this.tasks += 1;
    this.cursorBytes += bytes;
    return true;
  }
}

/** The fields a tree's reader reads of each task (getRecordFields needs the first four). */
export const TREE_FIELDS = ['id', 'rootId', 'agent', 'status', 'tenant', 'children'] as const;

interface TreeRead {
  store: TaskStore;
  principal: Principal;
  taskId: string;
  /** The seq each task was read to (tree-stream.ts: treeCursorOf). */
  cursor: ReadonlyMap<string, number>;
  /** Bytes of the cursor given (TreeBounds). */
  cursorBytes: number;
  /** Called with the first task past the bounds, if any, before any event. */
  leftOut: (taskId: string) => void;
}

/** A task's events and its descendants' (each after its seq in `cursor`), task by task, a page at a time. */
export async function* treeEventPages(options: TreeRead): AsyncGenerator<StoredEvent[]> {
  for (const id of await treeOf(options)) {
    for await (const page of options.store.eventPages(id, options.cursor.get(id) ?? 0)) {
      const own = page.filter((stored) => isOwnEvent(stored, id));
      if (own.length) yield own;
    }
  }
}

/** The ids of the tree as the caller may read it now, breadth-first, the task's first. */
async function treeOf(options: TreeRead): Promise<string[]> {
  const { store, principal } = options;
  const bounds = new TreeBounds(options.taskId, options.cursorBytes);
  const found: string[] = [];
  let level = [options.taskId];
  let full = false;
  while (level.length) {
    const records = await Promise.all(level.map((id) => store.getRecordFields(id, TREE_FIELDS)));
    const next: string[] = [];
    for (const record of records) {
      // A child is its parent's tenant's: checked, not assumed.
      if (!record || !canSee(principal, record)) continue;
      found.push(record.id);
      for (const child of full ? [] : (record.children ?? [])) {
        if (!child.startsWith(`${record.id}.`)) continue;
        if (!bounds.take(child, options.cursor.has(child))) {
          options.leftOut(child);
          full = true;
          break;
        }
        next.push(child);
      }
    }
    level = next;
  }
  return found;
}

/**
 * Whether an event is its stream's own, not another task's end repeated there (a subtask's, in its
 * root's stream: the subtask's own stream has it). Read off the envelope's `taskId`, the first one in
 * the text (the store writes `id`, `seq` and `rootId` before it), without parsing the event.
 */
export function isOwnEvent(stored: StoredEvent, taskId: string): boolean {
  const at = stored.text.indexOf('"taskId":');
  return at !== -1 && stored.text.startsWith(`"taskId":${JSON.stringify(taskId)}`, at);
}
