/**
 * The dashboard's client of the agentq API. With API keys configured, the key the user gives is kept
 * in this browser (localStorage) and sent as a header, and as a cookie so /admin/queues opens too.
 */

/** The API's own shapes: type-only imports, erased from the JavaScript the browser loads. */
import { AgentqError, createSseReader, type TaskEvent } from '@agentq/contract';
export type {
  DeliveryView as Delivery,
  PoolIsolation,
  PoolView as Pool,
  ScheduleView as Schedule,
  TaskEvent,
  TaskSummaryView as TaskSummary,
  TaskView as Task,
} from '@agentq/contract';

/** Who the key in use belongs to. */
export interface Me {
  tenant: string;
  admin: boolean;
}

const KEY = 'agentq_key';

class ApiError extends AgentqError {
  constructor(
    readonly status: number,
    message: string,
    /** The API's error code (`not_found`, `limit_reached`...). */
    readonly code: string = `http_${status}`,
  ) {
    super(message);
  }

  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** Called when the API asks for a key. */
let onUnauthorized: () => void = () => undefined;
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export function setApiKey(key: string): void {
  localStorage.setItem(KEY, key);
  document.cookie = `${KEY}=${encodeURIComponent(key)}; path=/; SameSite=Strict`;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = localStorage.getItem(KEY);
  return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
}

export async function request<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  if (response.status === 401) onUnauthorized();
  const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
  if (!response.ok)
    throw new ApiError(response.status, body.error?.message ?? `HTTP ${response.status}`, body.error?.code);
  return body as T;
}

/**
 * Follows a task's events (Server-Sent Events read with fetch, so the key can go in a header), from
 * the start, until the stream ends or `signal` aborts; a stream that broke, or was refused for a while
 * (503, 429), is opened again from the last event seen.
 */
export async function followEvents(
  taskId: string,
  onEvent: (event: TaskEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  let after = 0;
  // Reconnect after a dropped connection, from the last event seen.
  while (!signal.aborted) {
    try {
      const response = await fetch(`/v1/tasks/${encodeURIComponent(taskId)}/events?after=${after}`, {
        headers: headers({ accept: 'text/event-stream' }),
        signal,
      });
      if (response.status === 401) onUnauthorized();
      // Redis away for a moment (503), or this key's tenant at its number of streams (429): again when it says.
      if (response.status === 503 || response.status === 429) {
        await new Promise((resolve) => setTimeout(resolve, 1000 * (Number(response.headers.get('retry-after')) || 2)));
        continue;
      }
      if (!response.ok || !response.body) return;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const sse = createSseReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        for (const message of sse.push(value)) {
          const event = JSON.parse(message.data) as TaskEvent;
          after = event.seq;
          onEvent(event);
        }
      }
    } catch {
      if (signal.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
