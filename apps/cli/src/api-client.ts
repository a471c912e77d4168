/**
 * The CLI's client of an agentq API (local or remote), with its key when one is needed: @agentq/client
 * underneath (the one client: the dashboard's and any program's), with the CLI's own words for its errors.
 */
import { AgentqError, type ClientErrorCode, type TreeStreamedEvent } from '@agentq/contract';
import { AgentqApiError, createClient, type AgentqClient } from '@agentq/client';
export type { StreamedEvent, TreeStreamedEvent, TaskView as TaskSummary } from '@agentq/contract';

export interface ClientOptions {
  url: string;
  apiKey?: string;
  /** How long to wait before opening a dropped event stream again (default 1 s). */
  reconnectMs?: number;
}

export class ClientError extends AgentqError {
  /** The API's error code (`not_found`, `limit_reached`...), or `unreachable` when no answer came. */
  readonly code: ClientErrorCode | 'unreachable';
  constructor(
    message: string,
    /** The HTTP status and the API's `details` (for a 400: each bad field, with its path). */
    readonly status?: number,
    readonly details?: unknown,
    code?: ClientErrorCode,
  ) {
    super(message);
    this.code = code ?? 'unreachable';
  }

  /** No answer, a limit that resets, or the API or Redis away. */
  get retryable(): boolean {
    return this.status === undefined || this.status === 429 || this.status >= 500;
  }
}

/** How often in a row a dropped event stream is opened again. */
const RECONNECTS = 30;

export class ApiClient {
  readonly agentq: AgentqClient;

  constructor(private readonly options: ClientOptions) {
    this.agentq = createClient({ baseUrl: options.url, ...(options.apiKey ? { apiKey: options.apiKey } : {}) });
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.agentq.request<T>(method, path, body).catch((error: unknown) => {
      throw this.said(error);
    });
  }

  /**
   * Every event of a task, from the start, as it happens, until the task ends. A stream that drops
   * (the API restarted, the network blinked) is opened again from the last event seen (`Last-Event-ID`).
   */
  /** The task's events; with `descendants`, its whole tree's (and a `tree.limit` notice past its bounds). */
  async *events(taskId: string, options: { descendants?: boolean } = {}): AsyncGenerator<TreeStreamedEvent> {
    try {
      yield* this.agentq.events(taskId, {
        retryMs: this.options.reconnectMs ?? 1_000,
        maxRetries: RECONNECTS,
        descendants: options.descendants === true,
      });
    } catch (error) {
      if (error instanceof AgentqApiError && error.code === 'network')
        throw new ClientError(`Lost the event stream of ${taskId} (${error.message}).`);
      throw this.said(error);
    }
  }

  /** The shared client's error, in the CLI's words (exit status 1, the message alone). */
  said(error: unknown): unknown {
    if (!(error instanceof AgentqApiError)) return error;
    if (error.code === 'network' && error.status === 0)
      return new ClientError(
        `Could not reach agentq at ${this.options.url} (${error.message}). Is it running? Set --url or AGENTQ_URL.`,
      );
    return new ClientError(error.message, error.status || undefined, error.details, error.code);
  }
}
