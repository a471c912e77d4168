/** The CLI's client of an agentq API (local or remote), with its key when one is needed. */

export interface ClientOptions {
  url: string;
  apiKey?: string;
}

import type { TaskEvent } from '@agentq/contract';
export type { TaskEvent as StreamedEvent, TaskView as TaskSummary } from '@agentq/contract';

export class ClientError extends Error {
  override readonly name = 'ClientError';
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
      throw new ClientError(`Could not reach agentq at ${this.options.url} (${(error as Error).cause ?? (error as Error).message}). Is it running? Set --url or AGENTQ_URL.`);
    }
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as T & { error?: { message?: string } }) : ({} as T & { error?: { message?: string } });
    if (!response.ok) throw new ClientError(parsed.error?.message ?? `HTTP ${response.status}`);
    return parsed;
  }

  /** Every event of a task, from the start, as it happens, until the task ends. */
  async *events(taskId: string): AsyncGenerator<TaskEvent> {
    const response = await fetch(new URL(`/v1/tasks/${encodeURIComponent(taskId)}/events`, this.options.url), { headers: this.headers({ accept: 'text/event-stream' }) });
    if (!response.ok || !response.body) {
      const body = (await response.json().catch(() => ({}))) as { error?: { message?: string } };
      throw new ClientError(body.error?.message ?? `HTTP ${response.status}`);
    }
    let buffer = '';
    for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const data = buffer.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
        buffer = buffer.slice(end + 2);
        if (data) yield JSON.parse(data.slice(6)) as TaskEvent;
      }
    }
  }
}
