/** Reads a task's Server-Sent Events over real HTTP until the stream closes. */

export interface SseMessage {
  id: string;
  event: string;
  data: TaskEvent;
}

export async function readSse(url: string, headers: Record<string, string> = {}): Promise<SseMessage[]> {
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
  if (!response.ok || !response.body) throw new Error(`SSE ${url} answered ${response.status}`);
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const field = (name: string) => block.split('\n').find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? '';
      return { id: field('id'), event: field('event'), data: JSON.parse(field('data')) as TaskEvent };
    });
}

/** Resolves with the task's events once its terminal event arrives (the stream closes after it). */
export function waitForEnd(baseUrl: string, taskId: string): Promise<SseMessage[]> {
  return readSse(`${baseUrl}/v1/tasks/${taskId}/events`);
}import type { TaskEvent } from '@agentq/contract';

