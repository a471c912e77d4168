/**
 * Pub/sub on one Redis or on a Redis Cluster. On a cluster it is sharded: a channel belongs to the node
 * of its slot (its hash tag, the keys' prefix), SPUBLISH goes there and SSUBSCRIBE listens there. A
 * message then crosses no cluster bus, and a channel's messages keep their order: a PUBLISH goes to
 * whichever node the client picks, which sends it on to every other. The subscriber of a cluster is
 * made with `subscriber: true` (redis-connection.ts), which gives it a connection per node it listens on.
 */
import type { Redis } from 'ioredis';

/** A connection to a Redis Cluster (ioredis's Cluster, typed as a Redis: redis-connection.ts). */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

export function publish(redis: Redis, channel: string, message: string): Promise<unknown> {
  return isCluster(redis) ? redis.spublish(channel, message) : redis.publish(channel, message);
}

export function subscribe(subscriber: Redis, channel: string): Promise<unknown> {
  return isCluster(subscriber) ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel);
}

export function unsubscribe(subscriber: Redis, channel: string): Promise<unknown> {
  return isCluster(subscriber) ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel);
}

/** Calls `listener` with each message of the channels `subscriber` listens on. */
export function onMessage(subscriber: Redis, listener: (channel: string, message: string) => void): void {
  subscriber.on(isCluster(subscriber) ? 'smessage' : 'message', listener);
}
