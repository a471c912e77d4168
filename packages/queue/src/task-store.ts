/**
 * Task records in Redis: create (in bulk), read, list (newest first, paged, by status), and commit
 * changes through the one Lua script. Messages and events hang off each task's own keys.
 */
import { type TaskError, type TaskEvent, type TaskStatus, type TaskView, TERMINAL_STATUSES } from '@agentq/contract';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { AgentEventInput } from '@agentq/core';
import type { MemoryEntry, TokenUsage } from '@agentq/protocol';
import { COMMIT_SCRIPT } from './commit-script.js';
import { CREATE_KEYED_SCRIPT } from './create-keyed-script.js';
import type { Keys } from './keys.js';
import { readEvents } from './task-events.js';
import { DEFAULT_POOL, DEFAULT_TENANT, type PendingQuestion, type TaskInput } from './task-schemas.js';

export interface CommitOptions {
  taskId: string;
  /** Change the status to this. */
  status?: TaskStatus;
  /** Commit only when the current status is one of these; otherwise nothing is written. */
  expect?: readonly TaskStatus[];
  /** Commit only while this run token is the task's: the worker that wrote it still holds the task. */
  runToken?: string;
  fields?: Record<string, string>;
  usage?: TokenUsage;
  steps?: number;
  messages?: readonly MemoryEntry[];
  events?: ReadonlyArray<AgentEventInput & { agent?: string; worker?: string; taskId?: string }>;
}

export interface CommitResult {
  /** False when `expect` or `runToken` did not hold, or the task does not exist. */
  applied: boolean;
  status: TaskStatus | undefined;
  cancelRequested: boolean;
}

export interface ListTasksOptions {
  status?: TaskStatus;
  limit: number;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
  /** Only tasks whose prompt contains this text (any case). */
  q?: string;
  /** Only this tenant's tasks. Default: every tenant's. */
  tenant?: string;
}

/** How many tasks a search reads at most per page before it answers with what it found. */
const SEARCH_SCAN_LIMIT = 5_000;

export class TaskStore {
  /**
   * @param retentionMs how long a submitted task's data is kept after it ends. Default 7 days.
   */
  constructor(
    readonly redis: Redis,
    readonly keys: Keys,
    readonly retentionMs = 7 * 24 * 3600 * 1000,
  ) {
    redis.defineCommand('agentqCommit', { numberOfKeys: 6, lua: COMMIT_SCRIPT });
    redis.defineCommand('agentqCreateKeyed', { numberOfKeys: 5, lua: CREATE_KEYED_SCRIPT });
  }

  /**
   * Stores new tasks of a tenant as `queued`, each with its `task.queued` event; answers them in order.
   * A task whose `idempotencyKey` already names a task of this tenant (within the retention) is not
   * created again: that task comes back, with `existing` set to its status.
   */
  async create(inputs: readonly TaskInput[], options: { tenant?: string } = {}): Promise<CreatedTask[]> {
    const tenant = options.tenant ?? DEFAULT_TENANT;
    const lastOrder = await this.redis.incrby(this.keys.orderCounter, inputs.length);
    const now = new Date().toISOString();
    const pipeline = this.redis.pipeline();
    const created = inputs.map((input, index) => {
      const id = randomUUID();
      const order = lastOrder - inputs.length + index + 1;
      const agent = input.agent ?? DEFAULT_POOL;
      const priority = input.priority ?? 5;
      const fields = {
        id,
        rootId: id,
        tenant,
        agent,
        prompt: input.prompt,
        priority: String(priority),
        metadata: JSON.stringify(input.metadata ?? {}),
        status: 'queued',
        listed: '1',
        order: String(order),
        steps: '0',
        promptTokens: '0',
        completionTokens: '0',
        createdAt: now,
        seq: '1',
      };
      const event: TaskEvent = { id: `${id}:1`, seq: 1, taskId: id, rootId: id, ts: now, type: 'task.queued', agent, data: { priority } };
      if (input.idempotencyKey !== undefined) {
        (pipeline as unknown as CreateKeyedCommand).agentqCreateKeyed(
          this.keys.idempotency(tenant, input.idempotencyKey),
          this.keys.allTasks,
          this.keys.tasksWithStatus('queued'),
          this.keys.tenantTasks(tenant),
          this.keys.tenantTasksWithStatus(tenant, 'queued'),
          this.keys.task(''),
          id,
          String(order),
          wellFormedJson(JSON.stringify(fields)),
          wellFormedJson(JSON.stringify(event)),
          String(this.retentionMs),
        );
        return { id, agent, priority, keyed: true };
      }
      pipeline.hset(this.keys.task(id), fields);
      pipeline.zadd(this.keys.allTasks, order, id);
      pipeline.zadd(this.keys.tasksWithStatus('queued'), order, id);
      pipeline.zadd(this.keys.tenantTasks(tenant), order, id);
      pipeline.zadd(this.keys.tenantTasksWithStatus(tenant, 'queued'), order, id);
      pipeline.xadd(this.keys.events(id), '1-0', 'event', JSON.stringify(event));
      return { id, agent, priority, keyed: false };
    });
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([error]) => error);
    if (failed) throw failed[0]!;
    // Keyed tasks answer with their script's reply, in pipeline order.
    const keyedReplies = results.filter(([, reply]) => Array.isArray(reply)).map(([, reply]) => reply as [string, string]);
    let next = 0;
    return created.map(({ keyed, ...task }) => {
      if (!keyed) return task;
      const [id, status] = keyedReplies[next++]!;
      return status === 'created' ? task : { ...task, id, existing: status as TaskStatus };
    });
  }

  async commit(options: CommitOptions): Promise<CommitResult> {
    const { taskId } = options;
    const ts = new Date().toISOString();
    const payload = {
      taskId,
      channel: this.keys.eventsChannel(taskId),
      ...(options.status ? { status: options.status } : {}),
      ...(options.expect ? { expect: options.expect } : {}),
      ...(options.runToken ? { runToken: options.runToken } : {}),
      ...(options.fields ? { fields: options.fields } : {}),
      ...(options.usage ? { usage: [options.usage.promptTokens, options.usage.completionTokens] } : {}),
      ...(options.steps !== undefined ? { steps: options.steps } : {}),
      ...(options.status && TERMINAL_STATUSES.has(options.status) ? { expireAt: Date.now() + this.retentionMs } : {}),
      messages: (options.messages ?? []).map((message) => JSON.stringify(message)),
      // The script puts `id`, `seq` and `rootId` in front. An event may name another task (a subtask's
      // event mirrored into its root's stream).
      events: (options.events ?? []).map((event) => JSON.stringify({ taskId, ts, ...event })),
    };
    const [seq, status, cancelRequested] = (await (this.redis as unknown as CommitCommand).agentqCommit(
      this.keys.task(taskId),
      this.keys.messages(taskId),
      this.keys.events(taskId),
      this.keys.statusPrefix,
      this.keys.expiry,
      this.keys.tenantPrefix,
      wellFormedJson(JSON.stringify(payload)),
    )) as [number, string, string];
    return { applied: seq >= 0, status: (status || undefined) as TaskStatus | undefined, cancelRequested: cancelRequested === '1' };
  }

  /** The task as shown; a planned task with its plan, its subtasks' statuses and its progress. */
  async get(taskId: string): Promise<TaskView | undefined> {
    const hash = await this.redis.hgetall(this.keys.task(taskId));
    if (!hash.id) return undefined;
    const view = toView(hash);
    if (!hash.children) return view;
    const ids = JSON.parse(hash.children) as string[];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.task(id), 'agent', 'status', 'planId', 'promptTokens', 'completionTokens');
    const rows = ((await pipeline.exec()) ?? []).map(([, row]) => row as Array<string | null>);
    const children = ids.map((id, index) => {
      const [agent, status, planId] = rows[index] ?? [null, null, null];
      return { id, planId: planId ?? '', agent: agent ?? '', status: (status ?? 'pending') as TaskStatus };
    });
    const plan = (JSON.parse(hash.plan ?? '[]') as Array<{ id: string; agent: string; task: string; need: string[]; taskId: string; version: number }>).map(
      ({ id, agent, task, need, taskId: subtaskId, version }) => ({ id, agent, task, need, taskId: subtaskId, version }),
    );
    // Done is completed: a cancelled or failed subtask has ended, but is not done.
    const done = children.filter((child) => child.status === 'completed').length;
    const ended = children.filter((child) => TERMINAL_STATUSES.has(child.status)).length;
    const totalUsage = rows.reduce(
      (total, row) => ({ promptTokens: total.promptTokens + Number(row[3] ?? 0), completionTokens: total.completionTokens + Number(row[4] ?? 0) }),
      { ...view.usage },
    );
    return { ...view, plan, children, progress: { done, ended, total: children.length }, totalUsage };
  }

  /** The raw record, with internal fields such as `cancelRequested`. */
  async getRecord(taskId: string): Promise<Record<string, string> | undefined> {
    const hash = await this.redis.hgetall(this.keys.task(taskId));
    return hash.id ? hash : undefined;
  }

  async list(options: ListTasksOptions): Promise<{ tasks: TaskView[]; nextCursor: string | null }> {
    const { tenant, status } = options;
    const key =
      tenant === undefined
        ? status
          ? this.keys.tasksWithStatus(status)
          : this.keys.allTasks
        : status
          ? this.keys.tenantTasksWithStatus(tenant, status)
          : this.keys.tenantTasks(tenant);
    const needle = options.q?.toLowerCase();
    const found: TaskView[] = [];
    let max = options.cursor ? `(${options.cursor}` : '+inf';
    let scanned = 0;
    // Pages of the index, newest first, until the page is full (a search may read several).
    for (;;) {
      const batch = needle ? 200 : options.limit;
      const entries = await this.redis.zrevrangebyscore(key, max, '-inf', 'WITHSCORES', 'LIMIT', 0, batch);
      const ids = entries.filter((_, index) => index % 2 === 0);
      const scores = entries.filter((_, index) => index % 2 === 1);
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hgetall(this.keys.task(id));
      const hashes = ((await pipeline.exec()) ?? []).map(([, hash]) => hash as Record<string, string>);
      for (const [index, hash] of hashes.entries()) {
        max = `(${scores[index]}`;
        if (!hash.id || (needle && !(hash.prompt ?? '').toLowerCase().includes(needle))) continue;
        found.push(toView(hash));
        if (found.length === options.limit) return { tasks: found, nextCursor: scores[index]! };
      }
      scanned += ids.length;
      if (ids.length < batch || scanned >= SEARCH_SCAN_LIMIT) {
        return { tasks: found, nextCursor: ids.length < batch ? null : max.slice(1) };
      }
    }
  }

  /** The status of many tasks at once; an unknown id (or another tenant's, given `viewer`) has status `null`. */
  async statuses(ids: readonly string[], viewer?: { tenant: string; admin: boolean }): Promise<Array<{ id: string; status: TaskStatus | null }>> {
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.task(id), 'status', 'tenant');
    const results = (await pipeline.exec()) ?? [];
    return ids.map((id, index) => {
      const [status, tenant] = (results[index]?.[1] as Array<string | null> | undefined) ?? [null, null];
      const visible = !viewer || viewer.admin || (tenant ?? DEFAULT_TENANT) === viewer.tenant;
      return { id, status: visible ? ((status as TaskStatus | null) ?? null) : null };
    });
  }

  async messages(taskId: string): Promise<MemoryEntry[]> {
    const raw = await this.redis.lrange(this.keys.messages(taskId), 0, -1);
    return raw.map((entry) => JSON.parse(entry) as MemoryEntry);
  }

  async events(taskId: string, afterSeq?: number): Promise<TaskEvent[]> {
    return readEvents({ redis: this.redis, key: this.keys.events(taskId), ...(afterSeq ? { afterSeq } : {}) });
  }

  async requestCancel(taskId: string): Promise<CommitResult> {
    return this.commit({ taskId, expect: ['pending', 'queued', 'running', 'waiting'], fields: { cancelRequested: '1' } });
  }
}

/**
 * JSON.stringify writes a lone surrogate (half an emoji a model cut off) as a `\udXXX` escape, and only
 * then (pairs stay raw characters); Redis's Lua JSON decoder refuses those, and with them the whole
 * commit. Each becomes U+FFFD, the replacement character; an escaped backslash before it is kept apart.
 */
const LONE_SURROGATE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/gi;

export function wellFormedJson(json: string): string {
  return json.replace(LONE_SURROGATE, '$1\\ufffd');
}

/** A task `create` stored, or found by its idempotency key (then `existing` is its status). */
export interface CreatedTask {
  id: string;
  agent: string;
  priority: number;
  existing?: TaskStatus;
}

interface CreateKeyedCommand {
  agentqCreateKeyed(...args: string[]): unknown;
}

interface CommitCommand {
  agentqCommit(...args: string[]): Promise<unknown>;
}

function toView(hash: Record<string, string>): TaskView {
  return {
    id: hash.id!,
    rootId: hash.rootId ?? hash.id!,
    parentId: hash.parentId || null,
    tenant: hash.tenant ?? DEFAULT_TENANT,
    status: hash.status as TaskStatus,
    agent: hash.agent ?? '',
    prompt: hash.prompt ?? '',
    priority: Number(hash.priority ?? 5),
    metadata: hash.metadata ? (JSON.parse(hash.metadata) as Record<string, unknown>) : {},
    result: hash.result ?? null,
    error: hash.error ? (JSON.parse(hash.error) as TaskError) : null,
    question: hash.status === 'waiting' && hash.pending ? (JSON.parse(hash.pending) as PendingQuestion).question : null,
    steps: Number(hash.steps ?? 0),
    usage: { promptTokens: Number(hash.promptTokens ?? 0), completionTokens: Number(hash.completionTokens ?? 0) },
    createdAt: hash.createdAt ?? '',
    startedAt: hash.startedAt ?? null,
    finishedAt: hash.finishedAt ?? null,
  };
}
