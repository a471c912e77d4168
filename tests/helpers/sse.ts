/** Reads a task's Server-Sent Events over real HTTP until the stream closes. */
import { createSseReader, type TaskEvent } from '@agentq/contract';

export interface SseMessage {
  id: string;
  event: string;
  data: TaskEvent;
}

export async function readSse(url: string, headers: Record<string, string> = {}): Promise<SseMessage[]> {
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
  if (!response.ok || !response.body) throw new Error(`SSE ${url} answered ${response.status}`);
  return createSseReader()
    .push(await response.text())
    .map((message) => ({
      id: message.id ?? '',
      event: message.event ?? '',
      data: JSON.parse(message.data) as TaskEvent,
    }));
}

/** Resolves with the task's events once its terminal event arrives (the stream closes after it). */
export function waitForEnd(
  baseUrl: string,
  taskId: string,
  headers: Record<string, string> = {},
): Promise<SseMessage[]> {
  return readSse(`${baseUrl}/v1/tasks/${taskId}/events`, headers);
}

/** Reads a task's event stream until an event of `type` arrives (the stream stays open after it). */
export async function waitForEvent(
  baseUrl: string,
  taskId: string,
  type: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const response = await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, {
    headers: { accept: 'text/event-stream', ...headers },
  });
  if (!response.ok || !response.body) throw new Error(`the stream of ${taskId} answered ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes(`event: ${type}\n`)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream of ${taskId} ended before ${type}:\n${text}`);
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
}

/** Reads a task's event stream until an event `matches` (the stream stays open after it); answers that event. */
export async function waitForEventWhere(
  baseUrl: string,
  taskId: string,
  matches: (event: TaskEvent) => boolean,
  headers: Record<string, string> = {},
): Promise<TaskEvent> {
  const response = await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, {
    headers: { accept: 'text/event-stream', ...headers },
  });
  if (!response.ok || !response.body) throw new Error(`the stream of ${taskId} answered ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const sse = createSseReader();
  const seen: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream of ${taskId} ended before the event awaited; it said: ${seen.join(', ')}`);
    for (const message of sse.push(decoder.decode(value, { stream: true }))) {
      if (!message.data) continue;
      const event = JSON.parse(message.data) as TaskEvent;
      seen.push(event.type);
      if (matches(event)) {
        await reader.cancel();
        return event;
      }
    }
  }
}

/**
 * Reads an event stream until `enough` says so (the connection is then dropped, as a client's that went
 * away) or the stream ends; answers every message read, `id:` as sent (a tree's cursor), `event:` and
 * data parsed (a `tree.limit` notice or a task's event).
 */
export async function readSseUntil(
  url: string,
  enough: (messages: readonly SseMessage[]) => boolean,
  headers: Record<string, string> = {},
): Promise<{ messages: SseMessage[]; ended: boolean }> {
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
  if (!response.ok || !response.body) throw new Error(`SSE ${url} answered ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const sse = createSseReader();
  const messages: SseMessage[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { messages, ended: true };
    for (const message of sse.push(decoder.decode(value, { stream: true }))) {
      messages.push({ id: message.id ?? '', event: message.event ?? '', data: JSON.parse(message.data) as TaskEvent });
      if (enough(messages)) {
        await reader.cancel();
        return { messages, ended: false };
      }
    }
  }
}
