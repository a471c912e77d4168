/**
 * A planned task's budget shared by subtasks that run on two worker processes at once: every one of
 * them stops once the budget is spent (whichever process runs it), and the root fails with what was
 * done. The model never stops asking for tools: spending, not the model, ends each run.
 */
import { afterAll, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

const usage = { promptTokens: 1_000, completionTokens: 100 };
const CALL_TOKENS = usage.promptTokens + usage.completionTokens;
const BUDGET_TOKENS = 30 * CALL_TOKENS;
const plan = ['1', '2', '3', '4'].map((id) => ({ id, agent: 'file', task: `list files forever (${id})`, need: [] }));
const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');

let fleet: Fleet | undefined;
afterAll(() => fleet?.stop());

it("stops every subtask of a plan on every worker process once the plan's budget is spent", async () => {
  fleet = await startFleet({
    name: 'plan-budget',
    model: 'budget-model',
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\``, usage },
      },
      { reply: { toolCalls: [{ name: 'list_files', arguments: {} }], usage, delayMs: 5 } },
    ],
    workers: 2,
    pools: 'planner,file',
    env: { AGENTQ_CONCURRENCY: '2', AGENTQ_MAX_STEPS: '200' },
  });
  const { baseUrl, double } = fleet;
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'a big job', budget: { tokens: BUDGET_TOKENS } }] }),
  });
  const [{ id }] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  await waitForEnd(baseUrl, id);
  const root = (await (await fetch(`${baseUrl}/v1/tasks/${id}`)).json()) as TaskView;
  expect(root.status).toBe('failed');
  expect(root.error?.code).toBe('budget');
  expect(root.children!.map((child) => child.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
  // Both processes ran subtasks, and every subtask stopped for the budget.
  const children = await Promise.all(
    root.children!.map(
      async (child) =>
        (await (
          await fetch(`${baseUrl}/v1/tasks/${child.id}/events`, { headers: { accept: 'application/json' } })
        ).json()) as Array<{ type: string; worker?: string; data: { error?: { code: string } } }>,
    ),
  );
  const workers = new Set(
    children.flatMap((events) => events.filter((event) => event.type === 'task.started').map((event) => event.worker)),
  );
  expect(workers.size).toBe(2);
  expect(children.map((events) => events.find((event) => event.type === 'task.failed')?.data.error?.code)).toEqual([
    'budget',
    'budget',
    'budget',
    'budget',
  ]);
  // Spent: the budget, past it by at most the calls under way when it was reached (one per running subtask).
  expect(root.budget!.spentTokens).toBeGreaterThanOrEqual(BUDGET_TOKENS);
  expect(root.budget!.spentTokens).toBeLessThanOrEqual(BUDGET_TOKENS + 4 * CALL_TOKENS);
  expect(root.budget!.spentTokens).toBe(double.requests.length * CALL_TOKENS);
}, 60_000);
