/**
 * The API's OpenAPI document: valid OpenAPI 3.1 (a real validator), every route of the app in it with
 * its method, and what the routes really answer valid against the schemas it states.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '@agentq/api';
import { EventHub } from '@agentq/store';
import { createLogger, createMetrics } from '@agentq/telemetry';
import { startStack, type Stack } from '../helpers/stack.js';
import { redisUrl } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

interface Document {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
  components: { schemas: Record<string, unknown> };
}

let stack: Stack;
let document: Document;
beforeAll(async () => {
  stack = await startStack({ pools: ['casual'], rules: [{ reply: { content: 'done' } }] });
  const response = await fetch(`${stack.api.url}/openapi.json`);
  expect(response.status).toBe(200);
  document = (await response.json()) as Document;
});
afterAll(() => stack?.close());

/** Every route the express app serves, as `METHOD /path` with `{param}`s, walking its routers. */
async function appRoutes(): Promise<string[]> {
  // The stack's own configuration and install: the app a started API serves.
  const redis = new Redis(redisUrl(), { lazyConnect: true });
  const subscriber = new Redis(redisUrl(), { lazyConnect: true });
  const { config, api } = stack!;
  const app = createApp({
    config,
    install: api.install,
    hub: new EventHub(subscriber, api.install.keys, redis),
    redis,
    logger: createLogger({ name: 'routes', level: 'silent' }),
    metrics: createMetrics(),
  });
  const routes: string[] = [];
  interface Layer {
    route?: { path: string; methods: Record<string, boolean> };
    handle?: { stack?: Layer[] };
    match(path: string): boolean;
  }
  const walk = (layers: Layer[]) => {
    for (const layer of layers) {
      if (layer.route)
        for (const method of Object.keys(layer.route.methods))
          routes.push(`${method.toUpperCase()} ${layer.route.path.replace(/[:*](\w+)/g, '{$1}')}`);
      // bull-board's own UI and its API (mounted at /admin/queues, for admins) are not agentq's API.
      else if (layer.handle?.stack && !(layer.match('/admin/queues/x') && !layer.match('/not-a-mount')))
        walk(layer.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  redis.disconnect();
  subscriber.disconnect();
  return routes;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('describes every route of the app, with its method', async () => {
    const routes = await appRoutes();
    expect(routes.length).toBeGreaterThan(10);
    const described = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(new Set(described)).toEqual(new Set(routes));
  });

  it('names every operation (a unique operationId) and tags it', () => {
    const operations = Object.values(document.paths).flatMap((methods) =>
      Object.values(methods as Record<string, { operationId?: string; tags?: string[] }>),
    );
    expect(operations.filter((operation) => !operation.operationId || !operation.tags?.length)).toEqual([]);
    const ids = operations.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('states what the routes really answer', async () => {
    const ajv = new Ajv2020({ strict: false });
    // Each response schema with the document's components beside it, where its $refs point.
    const validator = (path: string, method: string, status: string) =>
      ajv.compile({
        ...(document.paths[path]![method]!.responses[status]!.content!['application/json']!.schema as object),
        components: document.components,
      });
    const check = (path: string, method: string, status: string, body: unknown) => {
      const validate = validator(path, method, status);
      expect(validate(body), `${method.toUpperCase()} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(
        true,
      );
    };
    // The schemas do say no to what does not fit.
    expect(validator('/v1/tasks/{id}', 'get', '200')({ error: { code: 'not_found', message: 'x' } })).toBe(false);
    const submit = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: 'describe me', agent: 'casual' }] }),
    });
    const submitted = (await submit.json()) as { tasks: Array<{ id: string }> };
    check('/v1/tasks', 'post', '202', submitted);
    const id = submitted.tasks[0]!.id;
    await waitForEnd(stack.api.url, id);
    check('/v1/tasks/{id}', 'get', '200', await (await fetch(`${stack.api.url}/v1/tasks/${id}`)).json());
    check('/v1/tasks', 'get', '200', await (await fetch(`${stack.api.url}/v1/tasks`)).json());
    check(
      '/v1/tasks/{id}/events',
      'get',
      '200',
      await (await fetch(`${stack.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })).json(),
    );
    check('/v1/pools', 'get', '200', await (await fetch(`${stack.api.url}/v1/pools`)).json());
    check(
      '/v1/tasks/{id}',
      'get',
      '404',
      await (await fetch(`${stack.api.url}/v1/tasks/00000000-0000-4000-8000-000000000000`)).json(),
    );
    check(
      '/v1/tasks',
      'post',
      '400',
      await (
        await fetch(`${stack.api.url}/v1/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"tasks":[]}',
        })
      ).json(),
    );
  });
});
