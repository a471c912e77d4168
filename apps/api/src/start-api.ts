/** Starts the API on a port, with its Redis connections; `close` stops it cleanly. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@agentq/config';
import { closeQueues, connectRedis, createAgentQueues, createKeys, EventHub, TaskStore } from '@agentq/queue';
import { createApp } from './create-app.js';

export interface ApiHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startApi(options: { config: Config; host?: string }): Promise<ApiHandle> {
  const { config } = options;
  const keys = createKeys(config.AGENTQ_REDIS_PREFIX);
  const redis = connectRedis({ url: config.REDIS_URL, name: 'agentq-api' });
  const subscriber = connectRedis({ url: config.REDIS_URL, name: 'agentq-api-events' });
  const store = new TaskStore(redis, keys, config.AGENTQ_RETENTION_HOURS * 3600 * 1000);
  const queues = createAgentQueues({ connection: redis, keys });
  const hub = new EventHub(subscriber, keys);
  const app = createApp({ store, queues, hub, redis, keys, bodyLimit: config.AGENTQ_BODY_LIMIT, ...(config.AGENTQ_API_KEYS ? { apiKeys: config.AGENTQ_API_KEYS } : {}) });
  const host = options.host ?? '0.0.0.0';
  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(config.PORT, host, () => resolve(listening));
    listening.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeQueues(queues);
      await Promise.all([redis.quit(), subscriber.quit()]);
    },
  };
}
