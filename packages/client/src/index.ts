/**
 * The typed client of the agentq API, for Node 20+ and browsers (fetch only, no dependency but the
 * shared contract's types):
 *
 *   const agentq = createClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.AGENTQ_API_KEY });
 *   const [id] = await agentq.submit([{ prompt: 'Count the words of a sentence', agent: 'casual' }]);
 *   for await (const event of agentq.events(id)) console.log(event.type); // llm.delta: the answer forming
 *   const task = await agentq.wait(id, { timeoutMs: 60_000 });
 *
 * Every refusal is an `AgentqApiError` with the API's code (`not_found`, `limit_reached`...), its status
 * and, for a bad field, its details; no answer at all is `network`, a wait that ran out `timeout`.
 */
import {
  createSseReader,
  isLiveDelta,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
  type ApprovalInput,
  type DeliveryView,
  type RetryPolicy,
  type SchedulePageView,
  type ScheduleView,
  type StreamedEvent,
  type TaskStatus,
  type TaskSummaryView,
  type TaskView,
  type TreeStreamedEvent,
  type UsageView,
  type WebhookEvent,
  type WebhookSecretView,
} from '@agentq/contract';
import { AgentqApiError } from './client-error.js';

export { AgentqApiError } from './client-error.js';
export type { ClientErrorCode } from './client-error.js';
export { isLiveDelta } from '@agentq/contract';
export type {
  ApprovalInput,
  DeliveryView,
  LlmDelta,
  RetryPolicy,
  SchedulePageView,
  ScheduleView,
  StreamedEvent,
  TaskEvent,
  TaskSummaryView,
  TaskView,
  UsageView,
  WaitingFor,
  WebhookSecretView,
} from '@agentq/contract';

/** One task as `POST /v1/tasks` takes it. */
export interface TaskInput {
  prompt: string;
  agent?: string;
  priority?: number;
  model?: string;
  idempotencyKey?: string;
  /** At most the key's limit of the tenant's tasks with this key run at once; the others wait their turn. */
  concurrencyKey?: string;
  /** Fewer than the tenant's limit per key (limits.perConcurrencyKey). */
  concurrencyLimit?: number;
  metadata?: Record<string, unknown>;
  budget?: { usd?: number; tokens?: number };
  /**
   * How its runs are tried again after an error: `attempts` in all (at most its agent's
   * `retry.maxAttempts`, 10 at most), `backoff` seconds before the second (1 to 3600), doubling after.
   * Left out: its agent's. An unreachable model endpoint spends no attempt.
   */
  retry?: Partial<RetryPolicy>;
  webhook?: { url: string; events?: WebhookEvent[] };
  /**
   * Files for its folder. `content`: base64 text as the API takes it (a string), or bytes (a Uint8Array
   * or Buffer, sent in base64), or `{ base64 }`. Anything else is refused before it is sent.
   */
  files?: Array<{ path: string; content: FileContent }>;
  plan?: Array<{ id: string; agent: string; task: string; need?: string[] }>;
}

/** A file's content: base64 text (the wire format), bytes, or base64 text as `{ base64 }`. */
export type FileContent = string | Uint8Array | { base64: string };

/** A schedule as `POST /v1/schedules` takes it: `cron` (and `timezone`) or `every`. */
export interface ScheduleInput {
  cron?: string;
  timezone?: string;
  every?: number;
  overlap?: 'skip' | 'allow';
  paused?: boolean;
  task: TaskInput;
}

export interface ClientOptions {
  /** Where the API answers, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A tenant's key, when the install has keys (a function: read at each call, for a key that changes). */
  apiKey?: string | (() => string | undefined);
  /** Another fetch (a proxy's, a test's). Default: the global one. */
  fetch?: typeof fetch;
}

export interface EventsOptions {
  /**
   * Start after this event's `seq` (the events up to it are not sent again). Default 0: from the start.
   * With `descendants`, a tree's cursor may be given instead: the `id:` of the last message read (e.g.
   * `12,c3.1:5`; the contract's tree-stream.ts).
   */
  after?: number | string;
  /**
   * The events of the task's whole tree: its children's, theirs, and so on, found as they are started,
   * each event with its own `taskId`; ends once every one of them has ended. Default false: the task's own.
   */
  descendants?: boolean;
  signal?: AbortSignal;
  /** How long to wait before opening a broken stream again. Default 500 ms (or what a 429/503 asks). */
  retryMs?: number;
  /** How many times in a row a stream may break before it is given up (`network`). Default: never given up. */
  maxRetries?: number;
}

export type AgentqClient = ReturnType<typeof createClient>;

export function createClient(options: ClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, '');
  const fetcher = options.fetch ?? fetch;
  const headers = (extra: Record<string, string> = {}) => {
    const key = typeof options.apiKey === 'function' ? options.apiKey() : options.apiKey;
    return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
  };

  /** One call: its JSON answer, or the API's refusal as an AgentqApiError. */
  async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const response = await send(method, path, body, signal);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  async function send(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    let response: Response;
    try {
      response = await fetcher(`${base}${path}`, {
        method,
        headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new AgentqApiError(
        'network',
        `No answer from ${base}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
        0,
      );
    }
    if (!response.ok) throw await refusal(response);
    return response;
  }

  const task = (id: string) => `/v1/tasks/${encodeURIComponent(id)}`;

  /**
   * A task's events from `after` on, as they happen, until its last one, and between them the live
   * `llm.delta`s of an answer forming (no `seq`; `isLiveDelta` tells them). A dropped connection (or a
   * 429/503) is opened again from the last event received (`Last-Event-ID`): no event is missed or
   * repeated. Ends when the task's stream ends; `signal` stops it. With `descendants: true`, the events
   * of its whole tree (and at most one `tree.limit` notice, when the tree holds more than a stream follows).
   */
  function events(id: string, eventsOptions: EventsOptions & { descendants: true }): AsyncGenerator<TreeStreamedEvent>;
  function events(id: string, eventsOptions?: EventsOptions & { descendants?: false }): AsyncGenerator<StreamedEvent>;
  function events(id: string, eventsOptions?: EventsOptions): AsyncGenerator<TreeStreamedEvent>;
  async function* events(id: string, eventsOptions: EventsOptions = {}): AsyncGenerator<TreeStreamedEvent> {
    const tree = eventsOptions.descendants === true;
    // Where the stream is: a seq, or a tree's cursor (the last message's id, passed back as it came).
    let cursor = String(eventsOptions.after ?? 0);
    // A tree's tasks' seqs read, and those not ended yet: each event once, across reconnects.
    const seqs = new Map<string, number>([[id, tree ? 0 : Number(cursor)]]);
    const running = new Set<string>();
    const { signal } = eventsOptions;
    const url = `${base}${task(id)}/events${tree ? '?descendants=true' : ''}`;
    for (let broken = 0; ; broken++) {
      if (broken > (eventsOptions.maxRetries ?? Infinity))
        throw new AgentqApiError('network', `The event stream of ${id} kept breaking before the task ended.`, 0);
      let response: Response | undefined;
      let waitMs = eventsOptions.retryMs ?? 500;
      try {
        response = await fetcher(url, {
          headers: headers({ accept: 'text/event-stream', ...(cursor !== '0' ? { 'last-event-id': cursor } : {}) }),
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (signal?.aborted) return;
        void error;
      }
      if (response && !response.ok) {
        const refused = await refusal(response);
        if (!refused.retryable) throw refused;
        waitMs = Math.max(waitMs, (refused.retryAfter ?? 0) * 1000);
      }
      if (response?.ok && response.body) {
        const reader = createSseReader();
        const decoder = new TextDecoder();
        const stream = response.body.getReader();
        let ended = false;
        try {
          for (;;) {
            const { value, done } = await stream.read();
            if (done) {
              ended = true;
              break;
            }
            for (const message of reader.push(decoder.decode(value, { stream: true }))) {
              const event = JSON.parse(message.data) as TreeStreamedEvent;
              // A delta of an answer forming (live only, no seq), or a tree's notice of its limit.
              if (event.type === 'tree.limit' || isLiveDelta(event)) {
                yield event;
                continue;
              }
              // Each once: a reconnect starts after the last one received (seq numbers a task's events, gapless).
              // (A plain stream's seqs are its task's, whoever's end it repeats.)
              const owner = tree ? event.taskId : id;
              if (event.seq <= (seqs.get(owner) ?? 0)) continue;
              seqs.set(owner, event.seq);
              cursor = tree ? (message.id ?? cursor) : String(event.seq);
              broken = 0;
              const end = TERMINAL_EVENT_TYPES.has(event.type);
              if (tree && end) running.delete(event.taskId);
              else if (tree) running.add(event.taskId);
              yield event;
              // A task's stream ends with its own end; a tree's when the API closes it.
              if (!tree && event.taskId === id && end) return;
            }
          }
        } catch (error) {
          if (signal?.aborted) return;
          void error;
        } finally {
          // The stream is given up: a cancel that fails has nothing left to cancel.
          await stream.cancel().catch(() => undefined);
        }
        // The API closes a stream after its last event: done, unless it was cut before.
        if (ended && !running.size && (await hasEnded(id))) return;
      }
      if (signal?.aborted) return;
      await delay(waitMs, signal);
    }
  }

  /** Whether a task has ended (its stream then has nothing more to say). */
  async function hasEnded(id: string): Promise<boolean> {
    const view = await call<TaskView>('GET', task(id));
    return TERMINAL_STATUSES.has(view.status);
  }

  return {
    /** Any call of the API (one this client does not wrap): its JSON answer, or an AgentqApiError. */
    request: call,
    /** Submits tasks (one request); answers their ids in order. `batch` names them as one batch. */
    async submit(tasks: TaskInput[], submitOptions: { batch?: string } = {}): Promise<string[]> {
      const answer = await call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', {
        ...(submitOptions.batch !== undefined ? { batch: submitOptions.batch } : {}),
        tasks: tasks.map((input, index) => wireTask(input, `tasks.${index}`)),
      });
      return answer.tasks.map((submitted) => submitted.id);
    },
    get: (id: string) => call<TaskView>('GET', task(id)),
    /**
     * A page of submitted tasks, newest first, without results: each prompt its first 1,024 bytes
     * (`truncated` when cut; `get` has it whole). A page may hold fewer than `limit` (it stops before 4
     * MiB; a search with `q` stops after reading 4 MiB of prompts, with no match even): follow `nextCursor`.
     */
    list: (query: { status?: TaskStatus; batch?: string; q?: string; limit?: number; cursor?: string } = {}) =>
      call<{ tasks: TaskSummaryView[]; nextCursor: string | null }>(
        'GET',
        `/v1/tasks?${new URLSearchParams({ ...stringsOf(query), fields: 'summary' })}`,
      ),
    events,
    /**
     * The task once it has ended (completed, failed, cancelled), followed over its event stream; an
     * AgentqApiError `timeout` when `timeoutMs` passes first, and `signal` stops it.
     */
    async wait(id: string, waitOptions: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<TaskView> {
      const stop = new AbortController();
      const timer =
        waitOptions.timeoutMs !== undefined
          ? setTimeout(() => stop.abort('timeout'), waitOptions.timeoutMs)
          : undefined;
      const onAbort = () => stop.abort(waitOptions.signal?.reason);
      waitOptions.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const now = await call<TaskView>('GET', task(id), undefined, stop.signal);
        if (TERMINAL_STATUSES.has(now.status)) return now;
        // Only the ending matters: the stream is read from the latest event on.
        for await (const event of events(id, { signal: stop.signal })) void event;
        if (stop.signal.aborted) throw aborted(stop, id, waitOptions.timeoutMs);
        return await call<TaskView>('GET', task(id), undefined, stop.signal);
      } catch (error) {
        if (stop.signal.aborted) throw aborted(stop, id, waitOptions.timeoutMs);
        throw error;
      } finally {
        clearTimeout(timer);
        waitOptions.signal?.removeEventListener('abort', onAbort);
      }
    },
    cancel: (id: string) => call<{ id: string; status: TaskStatus }>('POST', `${task(id)}/cancel`),
    retry: (id: string) => call<{ id: string; status: TaskStatus; retryOf: string }>('POST', `${task(id)}/retry`),
    fork: (id: string, fork: { fromStep: number; prompt?: string; model?: string; agent?: string }) =>
      call<{ id: string; status: TaskStatus; forkOf: { id: string; step: number } }>('POST', `${task(id)}/fork`, fork),
    /** Answers a waiting task's question. */
    answer: (id: string, text: string) =>
      call<{ id: string; status: TaskStatus }>('POST', `${task(id)}/input`, { text }),
    /**
     * Approves or rejects a call that waits for approval (one of the task's `waitingFor.calls`);
     * `remaining`: how many still wait (at 0 the task is queued again).
     */
    decide: (id: string, decision: ApprovalInput) =>
      call<{ id: string; status: TaskStatus; remaining: number }>('POST', `${task(id)}/approvals`, decision),
    remove: (id: string) => call<void>('DELETE', task(id)),
    usage: () => call<UsageView>('GET', '/v1/usage'),
    deliveries: {
      list: async (id: string) =>
        (await call<{ deliveries: DeliveryView[] }>('GET', `${task(id)}/deliveries`)).deliveries,
      resend: (id: string, deliveryId: string) =>
        call<DeliveryView>('POST', `${task(id)}/deliveries/${encodeURIComponent(deliveryId)}/resend`),
    },
    webhooks: {
      /** The key this tenant's deliveries are signed with (an admin key: `tenant`'s), for its receiver. */
      secret: (tenant?: string) =>
        call<WebhookSecretView>(
          'GET',
          `/v1/webhooks/secret${tenant !== undefined ? `?tenant=${encodeURIComponent(tenant)}` : ''}`,
        ),
    },
    schedules: {
      create: (schedule: ScheduleInput) =>
        call<ScheduleView>('POST', '/v1/schedules', { ...schedule, task: wireTask(schedule.task, 'task') }),
      /** A page of the tenant's schedules (an admin's: every tenant's, or `tenant`'s), newest first. */
      list: (query: { tenant?: string; limit?: number; cursor?: string } = {}) =>
        call<SchedulePageView>('GET', `/v1/schedules?${new URLSearchParams(stringsOf(query))}`),
      get: (id: string) => call<ScheduleView>('GET', `/v1/schedules/${encodeURIComponent(id)}`),
      update: (id: string, change: Partial<ScheduleInput>) =>
        call<ScheduleView>('PATCH', `/v1/schedules/${encodeURIComponent(id)}`, {
          ...change,
          ...(change.task ? { task: wireTask(change.task, 'task') } : {}),
        }),
      remove: (id: string) => call<void>('DELETE', `/v1/schedules/${encodeURIComponent(id)}`),
    },
    files: {
      list: (id: string) =>
        call<{ files: Array<{ path: string; size: number; modifiedAt: string }>; truncated: boolean }>(
          'GET',
          `${task(id)}/files`,
        ),
      /** One file's bytes. */
      download: async (id: string, path: string) =>
        new Uint8Array(
          await (
            await send('GET', `${task(id)}/files/${path.split('/').map(encodeURIComponent).join('/')}`)
          ).arrayBuffer(),
        ),
      /** The whole folder as .tar.gz bytes. */
      archive: async (id: string) =>
        new Uint8Array(await (await send('GET', `${task(id)}/files.tar.gz`)).arrayBuffer()),
    },
  };
}

/** A task as the wire wants it (`where`: its place in the body, for an error): files in base64. */
function wireTask(input: TaskInput, where: string): Record<string, unknown> {
  if (!input.files) return { ...input };
  return {
    ...input,
    files: input.files.map((file, index) => ({
      path: file.path,
      content: base64Of(file.content, `${where}.files.${index}.content`),
    })),
  };
}

/** A file's content as base64 text; a content of another kind is an `invalid_request` naming its place. */
function base64Of(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (content instanceof Uint8Array) return toBase64(content);
  if (typeof content === 'object' && content !== null && typeof (content as { base64?: unknown }).base64 === 'string')
    return (content as { base64: string }).base64;
  const message = 'give base64 text (a string), bytes (a Uint8Array or Buffer) or { base64: string }';
  // Refused here (status 0: nothing was sent), as the API refuses a bad field.
  throw new AgentqApiError('invalid_request', `${where}: ${message}, not ${describe(content)}.`, 0, [
    { path: where, message },
  ]);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object without a base64 string' : `a ${typeof value}`;
}

function toBase64(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 0x8000)
    text += String.fromCharCode(...bytes.subarray(index, index + 0x8000));
  return btoa(text);
}

function stringsOf(query: Record<string, string | number | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(query).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]])),
  );
}

/** The API's refusal as an AgentqApiError (its body's code and message, or the status alone). */
async function refusal(response: Response): Promise<AgentqApiError> {
  // A refusal without a JSON body is told by its status alone (below).
  const body = (await response.json().catch(() => undefined)) as
    { error?: { code?: string; message?: string; details?: unknown } } | undefined;
  const retryAfter = Number(response.headers.get('retry-after')) || undefined;
  return new AgentqApiError(
    (body?.error?.code ?? `http_${response.status}`) as never,
    body?.error?.message ?? `HTTP ${response.status}`,
    response.status,
    body?.error?.details,
    retryAfter,
  );
}

function aborted(stop: AbortController, id: string, timeoutMs: number | undefined): unknown {
  return stop.signal.reason === 'timeout'
    ? new AgentqApiError('timeout', `Task ${id} had not ended within ${timeoutMs} ms.`, 0)
    : stop.signal.reason;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
