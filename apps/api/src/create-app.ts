/**
 * The express app: the JSON API, health checks, the dashboard's files at `/`, bull-board at
 * `/admin/queues` (admins only), API keys and tenants when configured, and errors in one shape.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PLANNER_POOL } from '@agentq/contract';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Redis } from 'ioredis';
import {
  allowedModels,
  apiKeys,
  namedTenants,
  poolDescriptions,
  retryPolicyFor,
  taskWorkdir,
  tenantSseStreams,
  type Config,
} from '@agentq/config';
import { DEFAULT_TENANT, type EventHub } from '@agentq/store';
import type { Install } from '@agentq/tasks';
import { startTracing, type Logger, type Metrics, type Tracing } from '@agentq/telemetry';
import { authenticate, principalOf, requireAdmin } from './api-auth.js';
import { ApiError, errorHandler } from './api-error.js';
import { openApiDocument } from './openapi.js';
import { requestLog } from './request-log.js';
import { securityHeaders } from './security-headers.js';
import { eventsRouter } from './routes/events.js';
import { deliveriesRouter } from './routes/deliveries.js';
import { filesRouter } from './routes/files.js';
import { metricsRouter } from './routes/metrics.js';
import { overviewRouter } from './routes/overview.js';
import { poolsRouter } from './routes/pools.js';
import { schedulesRouter } from './routes/schedules.js';
import { tasksRouter, type SubmitRules } from './routes/tasks.js';
import { webhookRules } from './webhook-rules.js';
import { usageRouter } from './routes/usage.js';
import { webhookSecretRouter } from './routes/webhook-secret.js';

/** Longer URLs are a client's mistake (Node itself refuses request heads over 16 KiB). */
const MAX_URL_LENGTH = 8 * 1024;
/** The dashboard's package, found as Node finds the API's dependencies (a checkout's workspace, or an install's). */
const DASHBOARD = `${path.dirname(createRequire(import.meta.url).resolve('@agentq/dashboard/package.json'))}/`;
/** The contract package's built code: the dashboard imports it in the browser (an import map names it). */
const CONTRACT = path.join(dashboardPackage('@agentq/contract'), 'dist');
/** The API's client (@agentq/client): the dashboard's, in the browser. */
const CLIENT = path.join(dashboardPackage('@agentq/client'), 'dist');
/** The dashboard's two libraries, served from where npm put them (ES modules, no build step). */
const LIBRARIES = { 'lit-html': dashboardPackage('lit-html'), marked: dashboardPackage('marked') };

/** The directory of a package the dashboard depends on, found as Node would find it from there. */
function dashboardPackage(name: string): string {
  const found = createRequire(`${DASHBOARD}package.json`)
    .resolve.paths(name)
    ?.map((modules) => path.join(modules, name))
    .find((dir) => existsSync(path.join(dir, 'package.json')));
  if (!found) throw new Error(`The dashboard's package ${name} is not installed: run npm install.`);
  return found;
}

export interface CreateAppOptions {
  /** The loaded configuration: the API's own settings (body limit, keys, tenants, models, pools) are read from it. */
  config: Config;
  /** What this process built from the same configuration (composeInstall): keys, store, queues, services. */
  install: Install;
  hub: EventHub;
  /** The data connection: /readyz asks it. */
  redis: Redis;
  logger: Logger;
  metrics: Metrics;
  /** Default: off. */
  tracing?: Tracing;
}

export function createApp(options: CreateAppOptions): Express {
  const { config, install } = options;
  const { store, queues, settings } = install;
  const app = express();
  app.disable('x-powered-by');
  const tracing = options.tracing ?? startTracing({ serviceName: 'agentq-api' });
  app.use(requestLog({ logger: options.logger, metrics: options.metrics, tracing }));
  app.use(securityHeaders(`${DASHBOARD}public/index.html`));
  app.use((request, _response, next) => {
    next(
      request.url.length > MAX_URL_LENGTH
        ? new ApiError(
            'uri_too_long',
            `The URL is longer than ${MAX_URL_LENGTH} characters: task ids are short, and searches at most 200 characters.`,
          )
        : undefined,
    );
  });
  // A body is read only once its key was checked (below): an unauthenticated client's megabytes of JSON
  // are never parsed on the thread every tenant shares.
  const body = [
    express.json({ limit: config.AGENTQ_BODY_LIMIT }),
    // A body of another type is refused as such: otherwise it would be read as no body at all. (An empty
    // one is no body: fetch sends a POST without one with a Content-Length of 0.)
    (request: Request, _response: Response, next: NextFunction) => {
      const sent = Number(request.get('content-length') ?? 0) > 0 || request.get('transfer-encoding') !== undefined;
      next(
        sent && request.is('json') === false
          ? new ApiError(
              'unsupported_media_type',
              `The body's content-type is ${JSON.stringify(request.get('content-type') ?? '')}: send JSON, with content-type: application/json.`,
            )
          : undefined,
      );
    },
  ];

  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', async (_request, response) => {
    try {
      // Within a second either way: a Redis that accepts and never answers is not ready either.
      await Promise.race([
        options.redis.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 1 s')), 1_000).unref()),
      ]);
      response.json({ status: 'ready' });
    } catch (error) {
      throw new ApiError('unavailable', `Redis does not answer: ${(error as Error).message}`);
    }
  });

  // The API described: public (it holds no data), built once.
  let described: string | undefined;
  app.get('/openapi.json', (_request, response) => {
    described ??= JSON.stringify(openApiDocument());
    response.type('application/json').send(described);
  });

  const keys = apiKeys(config);
  const auth = authenticate({
    keys,
    ...(config.AGENTQ_ALLOW_NO_AUTH ? { allowAnyHost: true } : {}),
  });
  app.use('/v1', auth, ...body);
  app.use('/admin', auth, requireAdmin, ...body);
  app.get('/v1/me', (_request, response) => {
    response.json(principalOf(response));
  });
  const { room, webhookOf } = settings;
  const { deliveries } = install;
  // What a submitted task may name here (a schedule's task too).
  const submitRules: SubmitRules = {
    allowedModels: allowedModels(config),
    agents: queues.pools.filter((pool) => pool !== PLANNER_POOL),
    maxSubtasks: config.AGENTQ_MAX_SUBTASKS,
    ...(settings.diskQuota ? { diskQuota: settings.diskQuota } : {}),
    maxAttemptsOf: (pool) => retryPolicyFor(config, pool).maxAttempts,
    webhooks: webhookRules({ allowPrivate: config.AGENTQ_WEBHOOK_ALLOW_PRIVATE }),
  };
  // The tenants the configuration and the keys name, and `default` (everyone's without keys).
  const tenants = [...new Set([DEFAULT_TENANT, ...namedTenants(config), ...keys.map((key) => key.tenant)])];
  app.use(
    metricsRouter({
      metrics: options.metrics,
      queues,
      guard: [auth, requireAdmin],
      store,
      room,
      tenants,
      deliveries,
    }),
  );
  app.use(
    tasksRouter({
      store,
      tasks: install.tasks,
      metrics: options.metrics,
      tracing,
      ...submitRules,
    }),
  );
  app.use(deliveriesRouter({ store, deliveries }));
  app.use(webhookSecretRouter({ secretOf: (tenant) => webhookOf(tenant).secret }));
  app.use(schedulesRouter({ ...submitRules, schedules: install.schedules }));
  app.use(filesRouter({ store, workdirOf: (taskId) => taskWorkdir(config, taskId) }));
  app.use(
    eventsRouter({
      store,
      hub: options.hub,
      metrics: options.metrics,
      streamsOf: (tenant) => tenantSseStreams(config, tenant),
    }),
  );
  app.use(usageRouter({ store, room, tenants }));
  app.use(overviewRouter({ queues, store }));
  app.use(poolsRouter({ queues, store, descriptions: poolDescriptions(config) }));

  const board = new ExpressAdapter();
  board.setBasePath('/admin/queues');
  createBullBoard({
    // Each cell's queue of a pool (a cell's queues have their own prefix; several cells: named by cell).
    queues: queues.cells.flatMap((cell) =>
      queues.pools.map(
        (pool) =>
          new BullMQAdapter(cell.queue(pool), {
            readOnlyMode: false,
            ...(queues.cells.length > 1 ? { displayName: `${pool} (cell ${cell.keys.cell})` } : {}),
          }),
      ),
    ),
    serverAdapter: board,
  });
  // bull-board's page asks Google for its fonts: a page of an admin's tools does not call outside (the
  // browser then uses its own fonts).
  app.use('/admin/queues', (_request, response, next) => {
    response.set(
      'content-security-policy',
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
    );
    next();
  });
  app.use('/admin/queues', board.getRouter());

  // The dashboard: plain files, built by `npm run build` (no build step at run time).
  app.use('/assets/contract', express.static(CONTRACT, { index: false }));
  app.use('/assets/client', express.static(CLIENT, { index: false }));
  for (const [name, dir] of Object.entries(LIBRARIES))
    app.use(`/assets/${name}`, express.static(dir, { index: false }));
  app.use('/assets', express.static(`${DASHBOARD}dist`, { index: false }));
  app.use(express.static(`${DASHBOARD}public`));

  app.use((request) => {
    throw new ApiError('not_found', `No route ${request.method} ${request.path}.`);
  });
  app.use(errorHandler({ redisReady: () => options.redis.status === 'ready', logger: options.logger }));
  return app;
}
