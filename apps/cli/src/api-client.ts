/** The CLI's client of an agentq API (local or remote), with its key when one is needed. */

import { AgentqError, createSseReader, TERMINAL_EVENT_TYPES, type TaskEvent } from '@agentq/contract';
export type { TaskEvent as StreamedEvent, TaskView as TaskSummary } from '@agentq/contract';

export interface ClientOptions {
  url: string;
  apiKey?: string;
  /** How long to wait before opening a dropped event stream again (default 1 s). */
  reconnectMs?: number;
}

export class ClientError extends AgentqError {
  /** The API's error code (`not_found`, `limit_reached`...), or `unreachable` when no answer came. */
  readonly code: string;
  constructor(
    message: string,
    /** The HTTP status and the API's `details` (for a 400: each bad field, with its path). */
    readonly status?: number,
    readonly details?: unknown,
    code?: string,
  ) {
    super(message);
    this.code = code ?? (status === undefined ? 'unreachable' : `http_${status}`);
  }

  /** No answer, a limit that resets, or the API or Redis away. */
  get retryable(): boolean {
    return this.status === undefined || this.status === 429 || this.status >= 500;
  }
}

export class ApiClient {
  constructor(private readonly options: ClientOptions) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}), ...extra };
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(new URL(path, this.options.url), {
        method,
        headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ClientError(
        `Could not reach agentq at ${this.options.url} (${(error as Error).cause ?? (error as Error).message}). Is it running? Set --url or AGENTQ_URL.`,
      );
    }
    const text = await response.text();
    const parsed = text
      ? (JSON.parse(text) as T & { error?: { code?: string; message?: string; details?: unknown } })
      : ({} as T & { error?: { code?: string; message?: string; details?: unknown } });
    if (!response.ok)
      throw new ClientError(
        parsed.error?.message ?? `HTTP ${response.status}`,
        response.status,
        parsed.error?.details,
        parsed.error?.code,
      );
    return parsed;
  }

  /**
   * Every event of a task, from the start, as it happens, until the task ends. A stream that drops
   * (the API restarted, the network blinked) is opened again from the last event seen (`Last-Event-ID`).
   */
  async *events(taskId: string): AsyncGenerator<TaskEvent> {
    let lastSeq = 0;
    for (let dropped = 0; ;) {
      let response: Response;
      try {
        response = await fetch(new URL(`/v1/tasks/${encodeURIComponent(taskId)}/events`, this.options.url), {
          headers: this.headers({
            accept: 'text/event-stream',
            ...(lastSeq ? { 'last-event-id': String(lastSeq) } : {}),
          }),
        });
      } catch (error) {
        if (++dropped > RECONNECTS)
          throw new ClientError(`Lost the event stream of ${taskId} (${(error as Error).message}).`);
        await new Promise((resolve) => setTimeout(resolve, this.options.reconnectMs ?? RECONNECT_MS));
        continue;
      }
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new ClientError(
          body.error?.message ?? `HTTP ${response.status}`,
          response.status,
          undefined,
          body.error?.code,
        );
      }
      const reader = createSseReader();
      try {
        for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
          for (const message of reader.push(chunk)) {
            const event = JSON.parse(message.data) as TaskEvent;
            lastSeq = event.seq;
            dropped = 0;
            yield event;
            // The stream closes after the task's own end.
            if (event.taskId === taskId && TERMINAL_EVENT_TYPES.has(event.type)) return;
          }
        }
      } catch {
        // Dropped mid-stream: opened again below.
      }
      if (++dropped > RECONNECTS)
        throw new ClientError(`The event stream of ${taskId} kept closing before the task ended.`);
      await new Promise((resolve) => setTimeout(resolve, this.options.reconnectMs ?? RECONNECT_MS));
    }
  }
}

/** How often, and how soon, a dropped event stream is opened again. */
const RECONNECTS = 30;
const RECONNECT_MS = 1_000;
