/**
 * Webhooks through the real API and worker: a task's ending (or its question) is POSTed to its URL,
 * signed per Standard Webhooks (checked with the reference library), with its filter, its tenant's
 * default and secret, retries on failure, a visible delivery log, a resend, and the egress rules.
 */
import type { DeliveryView, TaskView, WebhookPayload } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { tenantSigningSecret } from '@agentq/config';
import { tenantsEnv } from '../helpers/config-file.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const SECRET = secret();
/** The default tenant's key: derived from the install's secret (each tenant has its own). */
const KEY = tenantSigningSecret(SECRET, 'default');
const opened: Array<Stack | WebhookReceiver> = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((thing) => thing.close()));
});

async function stackWith(options: Parameters<typeof startStack>[0] = {}): Promise<Stack> {
  const stack = await startStack({
    rules: [{ reply: { content: 'all done' } }],
    ...options,
    env: {
      AGENTQ_WEBHOOK_SECRET: SECRET,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTQ_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
      ...options.env,
    },
  });
  opened.push(stack);
  return stack;
}

async function receiver(statuses?: number[]): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(statuses);
  opened.push(started);
  return started;
}

/** The payload of a request, verified with the Standard Webhooks reference library (throws when it does not verify). */
function verified(request: ReceivedWebhook, key = KEY): WebhookPayload<TaskView> {
  return new Webhook(key).verify(request.body, request.headers as Record<string, string>) as WebhookPayload<TaskView>;
}

async function deliveries(stack: Stack, taskId: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}/deliveries`, { headers });
  return ((await response.json()) as { deliveries: DeliveryView[] }).deliveries;
}

describe('webhooks', () => {
  it('sends a signed task.completed with the task as the API shows it, and logs the delivery', async () => {
    const stack = await stackWith();
    const hook = await receiver();
    const [taskId] = await stack.submit([{ prompt: 'hello', agent: 'casual', webhook: { url: hook.url } }]);
    const [request] = await hook.receivedCount(1);
    const payload = verified(request!);
    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(payload).toEqual({
      type: 'task.completed',
      timestamp: expect.any(String),
      data: { ...task, resultBytes: Buffer.byteLength('all done'), truncated: false },
    });
    expect(task).toMatchObject({ status: 'completed', result: 'all done', webhook: { url: hook.url } });
    expect(request!.headers['webhook-id']).toMatch(new RegExp(`^msg_${taskId}_\\d+$`));
    // Signed with another secret, it does not verify; nor with the install's own.
    expect(() => verified(request!, secret())).toThrow();
    expect(() => verified(request!, SECRET)).toThrow();
    // The key a receiver is given: the caller's tenant's.
    const { body: given } = await getJson<{ tenant: string; secret: string }>(`${stack.api.url}/v1/webhooks/secret`);
    expect(given).toEqual({ tenant: 'default', secret: KEY });

    await expect.poll(async () => (await deliveries(stack, taskId!))[0]?.state).toBe('delivered');
    const [delivery] = await deliveries(stack, taskId!);
    expect(delivery).toMatchObject({
      id: request!.headers['webhook-id'],
      event: 'task.completed',
      url: hook.url,
      nextAttemptAt: null,
      attempts: [{ statusCode: 200, error: null }],
    });
  });

  it('retries a failing receiver on the schedule with the same id, then gives up; a resend sends it again', async () => {
    const stack = await stackWith();
    const hook = await receiver([500, 503, 500, 200]);
    const [taskId] = await stack.submit([{ prompt: 'hello', agent: 'casual', webhook: { url: hook.url } }]);
    // One attempt and one after each of the schedule's two delays, then no more.
    const requests = await hook.receivedCount(3);
    expect(new Set(requests.map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(100);
    await expect.poll(async () => (await deliveries(stack, taskId!))[0]?.state).toBe('failed');
    const [failed] = await deliveries(stack, taskId!);
    expect(failed!.attempts.map((attempt) => [attempt.statusCode, attempt.error])).toEqual([
      [500, 'answered 500'],
      [503, 'answered 503'],
      [500, 'answered 500'],
    ]);

    const resend = await fetch(`${stack.api.url}/v1/tasks/${taskId}/deliveries/${failed!.id}/resend`, {
      method: 'POST',
    });
    expect(resend.status).toBe(202);
    const [, , , again] = await hook.receivedCount(4);
    expect(again!.headers['webhook-id']).toBe(failed!.id);
    expect(verified(again!).type).toBe('task.completed');
    await expect.poll(async () => (await deliveries(stack, taskId!))[0]?.state).toBe('delivered');
    expect((await deliveries(stack, taskId!))[0]!.attempts).toHaveLength(4);

    const unknown = await fetch(`${stack.api.url}/v1/tasks/${taskId}/deliveries/msg_nope_1/resend`, {
      method: 'POST',
    });
    expect(unknown.status).toBe(404);
  });

  it('sends only the events asked for: task.waiting and task.cancelled, not task.completed', async () => {
    const stack = await stackWith({
      rules: [{ reply: { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which colour?' } }] } }],
    });
    const hook = await receiver();
    const events = ['task.waiting', 'task.cancelled'];
    const [asking, other] = await stack.submit([
      { prompt: 'ask me', agent: 'casual', webhook: { url: hook.url, events } },
      { prompt: 'x', agent: 'casual', webhook: { url: hook.url, events: ['task.failed'] } },
    ]);
    const [waiting] = await hook.receivedCount(1);
    expect(verified(waiting!)).toMatchObject({
      type: 'task.waiting',
      data: { id: asking, status: 'waiting', question: 'Which colour?' },
    });
    await fetch(`${stack.api.url}/v1/tasks/${asking}/cancel`, { method: 'POST' });
    const [, cancelled] = await hook.receivedCount(2);
    expect(verified(cancelled!)).toMatchObject({ type: 'task.cancelled', data: { id: asking, status: 'cancelled' } });
    expect(cancelled!.headers['webhook-id']).not.toBe(waiting!.headers['webhook-id']);
    // The other waits too (the double asks every task); its filter wants only a failure: nothing is made.
    await waitForEvent(stack.api.url, other!, 'task.waiting');
    expect(await deliveries(stack, other!)).toEqual([]);
    expect(hook.received).toHaveLength(2);
  });

  it("uses a tenant's default URL and its own secret", async () => {
    const acmeSecret = secret();
    const hook = await receiver();
    const stack = await stackWith({
      env: {
        ACME_WEBHOOK_SECRET: acmeSecret,
        ...tenantsEnv({
          acme: {
            keys: ['acme-key'],
            webhook: { url: hook.url, events: ['task.completed'], secret: { env: 'ACME_WEBHOOK_SECRET' } },
          },
          other: { keys: ['other-key'] },
        }),
      },
    });
    const response = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer acme-key' },
      body: JSON.stringify({ tasks: [{ prompt: 'hi', agent: 'casual' }] }),
    });
    const taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
    const [request] = await hook.receivedCount(1);
    expect(verified(request!, acmeSecret).data).toMatchObject({ id: taskId, tenant: 'acme' });
    expect(() => verified(request!, SECRET)).toThrow();
    // Another tenant sees neither the task nor its deliveries.
    const foreign = await fetch(`${stack.api.url}/v1/tasks/${taskId}/deliveries`, {
      headers: { authorization: 'Bearer other-key' },
    });
    expect(foreign.status).toBe(404);
    expect(await deliveries(stack, taskId, { authorization: 'Bearer acme-key' })).toHaveLength(1);
  });

  it('refuses a private target unless allowed, and a webhook when nothing can sign it', async () => {
    const strict = await stackWith({ pools: [], env: { AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    const submit = (stack: Stack, url: string) =>
      fetch(`${stack.api.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tasks: [{ prompt: 'x', agent: 'casual', webhook: { url } }] }),
      });
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://localhost/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest',
      'http://10.1.2.3/',
    ]) {
      const response = await submit(strict, url);
      expect(response.status, url).toBe(400);
      const body = (await response.json()) as { error: { details: Array<{ path: string; message: string }> } };
      expect(body.error.details).toEqual([
        { path: 'tasks.0.webhook.url', message: expect.stringContaining('AGENTQ_WEBHOOK_ALLOW_PRIVATE=true') },
      ]);
    }
    const badScheme = await submit(strict, 'file:///etc/passwd');
    expect(badScheme.status).toBe(400);

    const unsigned = await stackWith({ pools: [], env: { AGENTQ_WEBHOOK_SECRET: '' } });
    const response = await submit(unsigned, 'https://hooks.example.com/x');
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('AGENTQ_WEBHOOK_SECRET');
  });

  it('refuses a private target at delivery too, and shows the oldest pending delivery in /metrics', async () => {
    // The API allows it (the URL is checked where it is stored); the worker's own rule still holds.
    const stack = await stackWith({ pools: [], env: { AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h' } });
    const strictWorker = await startStack({
      env: {
        AGENTQ_REDIS_PREFIX: stack.config.AGENTQ_REDIS_PREFIX,
        AGENTQ_WEBHOOK_SECRET: SECRET,
        AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h',
        OPENAI_BASE_URL: stack.double.baseURL,
      },
    });
    opened.push(strictWorker);
    const hook = await receiver();
    const [taskId] = await stack.submit([{ prompt: 'x', agent: 'casual', webhook: { url: hook.url } }]);
    await waitForEnd(stack.api.url, taskId!);
    await expect.poll(async () => (await deliveries(stack, taskId!))[0]?.attempts.length).toBe(1);
    const [delivery] = await deliveries(stack, taskId!);
    expect(delivery).toMatchObject({ state: 'pending', attempts: [{ statusCode: null }] });
    expect(delivery!.attempts[0]!.error).toMatch(/not on the public internet.*AGENTQ_WEBHOOK_ALLOW_PRIVATE/);
    expect(hook.received).toHaveLength(0);
    const metrics = await (await fetch(`${stack.api.url}/metrics`)).text();
    expect(Number(/^agentq_webhook_oldest_pending_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });
});
