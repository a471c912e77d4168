/**
 * The dashboard's client of the agentq API. With API keys configured, the key the user gives is kept
 * in this browser (localStorage) and sent as a header, and as a cookie so /admin/queues opens too.
 */

/** The API's own shapes: type-only imports, erased from the JavaScript the browser loads. */
import { AgentqApiError, createClient } from '@agentq/client';
import type { StreamedEvent } from '@agentq/contract';
export { isLiveDelta } from '@agentq/client';
export type {
  DeliveryView as Delivery,
  StreamedEvent,
  PoolIsolation,
  PoolView as Pool,
  ScheduleView as Schedule,
  TaskEvent,
  TaskSummaryView as TaskSummary,
  TaskView as Task,
  WaitingFor,
} from '@agentq/contract';

/** Who the key in use belongs to. */
export interface Me {
  tenant: string;
  admin: boolean;
}

const KEY = 'agentq_key';

/** Called when the API asks for a key. */
let onUnauthorized: () => void = () => undefined;
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export function setApiKey(key: string): void {
  localStorage.setItem(KEY, key);
  document.cookie = `${KEY}=${encodeURIComponent(key)}; path=/; SameSite=Strict`;
}

/** The one client of the API (@agentq/client), with the key this browser keeps. */
const agentq = createClient({ baseUrl: location.origin, apiKey: () => localStorage.getItem(KEY) ?? undefined });

/** A 401 asks the user for a key (the error still goes to the caller). */
function askedForKey(error: unknown): never {
  if (error instanceof AgentqApiError && error.status === 401) onUnauthorized();
  throw error;
}

export async function request<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  return agentq.request<T>(init.method ?? 'GET', path, init.body, init.signal).catch(askedForKey);
}

/**
 * Follows a task's events from the start until the stream ends or `signal` aborts; a stream that broke,
 * or was refused for a while (503, 429), is opened again from the last event seen (the client does).
 */
export async function followEvents(
  taskId: string,
  onEvent: (event: StreamedEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const event of agentq.events(taskId, { signal, retryMs: 1_000 })) onEvent(event);
  } catch (error) {
    if (error instanceof AgentqApiError && error.status === 401) onUnauthorized();
  }
}
