/** The express app: JSON API, health checks, and errors in one shape. */
import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import type { AgentQueues, EventHub, TaskStore } from '@agentq/queue';
import { ApiError, errorHandler } from './api-error.js';
import { eventsRouter } from './routes/events.js';
import { tasksRouter } from './routes/tasks.js';

export interface CreateAppOptions {
  store: TaskStore;
  queues: AgentQueues;
  hub: EventHub;
  redis: Redis;
  /** Largest JSON body, e.g. `10mb`. */
  bodyLimit: string;
}

export function createApp(options: CreateAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: options.bodyLimit }));

  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', async (_request, response) => {
    try {
      await options.redis.ping();
      response.json({ status: 'ready' });
    } catch (error) {
      response.status(503).json({ error: { code: 'unavailable', message: `Redis does not answer: ${(error as Error).message}` } });
    }
  });
  app.use(tasksRouter({ store: options.store, queues: options.queues, publisher: options.redis }));
  app.use(eventsRouter({ store: options.store, hub: options.hub }));
  app.use((request) => {
    throw new ApiError('not_found', `No route ${request.method} ${request.path}.`);
  });
  app.use(errorHandler);
  return app;
}
