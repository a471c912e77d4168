/**
 * A model's answer as it forms, sent live to the task's followers: the pieces a stream gives are
 * gathered and published at most every 50 ms (about 20 messages a second a task, whatever the model's
 * pace) on the task's events channel, as `llm.delta` lines the API passes on and never stores. They go
 * out on the connection the task's commits use. What is still gathered when the answer is whole is
 * dropped (`end`): the `llm.response` that follows carries all of it, so an answer that comes within one
 * interval (a fast model) costs Redis nothing more.
 */
import type { LlmDelta } from '@agentq/contract';
import type { ModelDelta } from '@agentq/llm';
import type { Redis } from 'ioredis';
import { publish } from '@agentq/store';

export const DELTA_INTERVAL_MS = 50;

export interface LiveDeltas {
  push(delta: ModelDelta, step: number): void;
  /** The answer is whole: what is gathered and not sent is dropped. */
  end(): void;
}

export function liveDeltas(options: {
  redis: Redis;
  channel: string;
  task: { id: string; rootId: string };
  agent: string;
}): LiveDeltas {
  let gathered: { step: number; text: string; reasoning: string; toolCalls: string[]; restart: boolean } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!gathered) return;
    const { step, text, reasoning, toolCalls, restart } = gathered;
    gathered = undefined;
    const delta: LlmDelta = {
      type: 'llm.delta',
      taskId: options.task.id,
      rootId: options.task.rootId,
      ts: new Date().toISOString(),
      step,
      agent: options.agent,
      data: {
        ...(restart ? { restart: true as const } : {}),
        ...(text ? { text } : {}),
        ...(reasoning ? { reasoning } : {}),
        ...(toolCalls.length ? { toolCalls } : {}),
      },
    };
    // Live only: a follower that misses one (Redis away a moment) still gets the whole answer stored.
    publish(options.redis, options.channel, JSON.stringify(delta)).catch(() => undefined);
  };
  return {
    push(delta, step) {
      if (gathered && gathered.step !== step) flush();
      gathered ??= { step, text: '', reasoning: '', toolCalls: [], restart: false };
      if (delta.restart) Object.assign(gathered, { text: '', reasoning: '', toolCalls: [], restart: true });
      if (delta.text) gathered.text += delta.text;
      if (delta.reasoning) gathered.reasoning += delta.reasoning;
      if (delta.toolCall) gathered.toolCalls.push(delta.toolCall);
      timer ??= setTimeout(flush, DELTA_INTERVAL_MS);
    },
    end() {
      clearTimeout(timer);
      timer = undefined;
      gathered = undefined;
    },
  };
}
