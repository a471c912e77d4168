/**
 * Live events for many followers over one Redis subscriber connection: a process subscribes to a
 * task's channel while anyone follows it, and fans each event out in memory, parsed once and with
 * its JSON text as written (followers pass it on without writing it out again). A task is marked
 * followed before its first subscription (follow.lua): only a followed task's commits publish. A
 * follower reads what was stored after it subscribed, so a commit between the mark and the
 * subscription is read there, and one before the mark (not published) too.
 */
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { onMessage, subscribe, unsubscribe } from './pub-sub.js';
import { luaScript } from './lua-script.js';

const FOLLOW = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'follow',
  keys: ['taskKey'],
  args: [],
});
import type { StreamedEvent } from '@agentq/contract';

/** An event as it comes live: a stored one, or a delta of an answer forming (`llm.delta`, no `seq`). */
export interface LiveEvent {
  event: StreamedEvent;
  text: string;
}

export type EventListener = (event: LiveEvent) => void;

export class EventHub {
  private readonly listeners = new Map<string, Set<EventListener>>();

  constructor(
    private readonly subscriber: Redis,
    private readonly keys: Keys,
    /** The connection that marks a task followed (not the subscriber: it only listens). */
    private readonly redis: Redis,
  ) {
    onMessage(subscriber, (channel: string, payload: string) => {
      const followers = this.listeners.get(channel);
      if (!followers) return;
      // A write's events come as one message, one per line.
      for (const line of payload.split('\n')) {
        if (!line) continue;
        const event = { event: JSON.parse(line) as StreamedEvent, text: line };
        for (const listener of followers) listener(event);
      }
    });
  }

  /** Resolves once the subscription is active; returns the function that ends it. */
  async follow(taskId: string, listener: EventListener): Promise<() => void> {
    const channel = this.keys.eventsChannel(taskId);
    let followers = this.listeners.get(channel);
    if (!followers) {
      followers = new Set();
      this.listeners.set(channel, followers);
    }
    followers.add(listener);
    await FOLLOW.run(this.redis, { keys: { taskKey: this.keys.task(taskId) }, args: {} });
    await subscribe(this.subscriber, channel);
    return () => {
      followers.delete(listener);
      if (followers.size === 0 && this.listeners.get(channel) === followers) {
        this.listeners.delete(channel);
        // Nobody follows the channel any more: a failed unsubscribe costs only messages nobody reads, and ends with
        // the connection.
        void unsubscribe(this.subscriber, channel).catch(() => undefined);
      }
    };
  }
}
