import { WEBHOOK_BODY_LIMIT, type TaskView, type WebhookPayload, type WebhookTaskData } from '@agentq/contract';
import { describe, expect, it } from 'vitest';
import { webhookBody } from './webhook-body.js';

/** A task as GET shows it, with what the test sets. */
function task(fields: Partial<TaskView>): TaskView {
  return {
    id: 't1',
    tenant: 'acme',
    status: 'completed',
    prompt: 'p',
    result: 'r',
    metadata: {},
    ...fields,
  } as TaskView;
}

function parsed(body: Buffer): WebhookPayload<WebhookTaskData<TaskView>> {
  return JSON.parse(body.toString('utf8')) as WebhookPayload<WebhookTaskData<TaskView>>;
}

const base = { type: 'task.completed' as const, timestamp: '2026-01-01T00:00:00.000Z' };

describe('webhookBody', () => {
  it('sends a small task whole, with its result size and no flag', () => {
    const body = parsed(webhookBody({ ...base, task: task({ result: 'été' }), resultBytes: 5, resultCut: false }));
    expect(body.data).toMatchObject({ result: 'été', resultBytes: 5, truncated: false });
  });

  it('keeps the head and tail of any long text, and says so', () => {
    const question = `Q${'q'.repeat(100_000)}END`;
    const body = parsed(
      webhookBody({
        ...base,
        task: task({ question, waitingFor: { kind: 'answer', question } }),
        resultBytes: 1,
        resultCut: false,
      }),
    );
    expect(body.data.truncated).toBe(true);
    expect(body.data.question!.length).toBeLessThan(33_000);
    expect(body.data.question!.startsWith('Qqq')).toBe(true);
    expect(body.data.question!.endsWith('END')).toBe(true);
    expect(body.data.question).toContain('characters left out of this delivery; 100004 in all');
  });

  it('past the body limit, leaves out the plan and subtasks and keeps 1 KiB of each other text', () => {
    const plan = Array.from({ length: 60 }, (_, index) => ({
      id: String(index),
      agent: 'coder',
      task: 'x'.repeat(30_000),
      need: [],
      taskId: `s${index}`,
      version: 1,
    }));
    const body = webhookBody({
      ...base,
      task: task({ plan, prompt: 'p'.repeat(20_000), result: 'r'.repeat(30_000) }),
      resultBytes: 30_000,
      resultCut: false,
    });
    expect(body.length).toBeLessThanOrEqual(WEBHOOK_BODY_LIMIT);
    const data = parsed(body).data;
    expect(data.plan).toBeUndefined();
    expect(data.prompt.length).toBeLessThan(1_200);
    expect(data.result).toHaveLength(30_000);
    expect(data.truncated).toBe(true);
  });
});
