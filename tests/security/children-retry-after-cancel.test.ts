/**
 * A parent cancelled while it waits for its children, then retried. The docs: "A failed or cancelled
 * parent that started children is retried from its last step (a fork that keeps every step it made), so
 * children that completed are not run again." A lead starts two children; one completes, the other is
 * still at its model call when the tenant cancels the lead (the natural moment to cancel: a child takes
 * too long). The retry is a fork from step 1, before the `delegate` call, so it makes two new children
 * and the child that had completed runs again: its model was asked twice (once expected). Real API and
 * worker processes, the wire double as every model.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type AgentqClient } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';

let fleet: Fleet;
let client: AgentqClient;
/** The slow child's model answers once this is let go (after the cancel). */
let letGo: () => void = () => undefined;
const slow = new Promise<void>((resolve) => (letGo = resolve));

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const steps = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'assistant').length;
const asked = (text: string) => fleet.double.requests.filter((request) => prompt(request) === text).length;

beforeAll(async () => {
  fleet = await startFleet({
    name: 'children-retry-after-cancel',
    model: 'hostile-model',
    workers: 1,
    pools: 'lead,helper',
    env: {
      AGENTQ_CONFIG: configFile({
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['helper'] },
          },
          helper: { description: 'helps', instructions: 'You help.', concurrency: 2 },
        },
      }),
    },
    rules: [
      {
        match: (request) => prompt(request) === 'lead the work' && steps(request) === 0,
        reply: {
          toolCalls: [
            {
              id: 'd1',
              name: 'delegate',
              arguments: {
                tasks: [
                  { agent: 'helper', prompt: 'quick part' },
                  { agent: 'helper', prompt: 'slow part' },
                ],
              },
            },
          ],
        },
      },
      { match: (request) => prompt(request) === 'lead the work', reply: { content: 'gathered' } },
      {
        match: (request) => prompt(request) === 'slow part',
        reply: async () => (await slow, { content: 'slow done' }),
      },
      { reply: { content: 'quick done' } },
    ],
  });
  client = createClient({ baseUrl: fleet.baseUrl });
}, 120_000);

afterAll(async () => {
  letGo();
  await fleet?.stop();
});

it('does not run a child that completed again when its cancelled parent is retried', async () => {
  const [id] = await client.submit([{ prompt: 'lead the work', agent: 'lead' }]);
  await waitForEvent(fleet.baseUrl, id!, 'task.waiting');
  expect((await waitForEnd(fleet.baseUrl, `${id}.c1.1`)).at(-1)!.event).toBe('task.completed');
  await client.cancel(id!);
  expect((await waitForEnd(fleet.baseUrl, id!)).at(-1)!.event).toBe('task.cancelled');
  letGo();

  const { id: retried } = await client.retry(id!);
  expect((await waitForEnd(fleet.baseUrl, retried)).at(-1)!.event).toBe('task.completed');
  const retry = await client.get(retried);
  console.log(
    `retry ${JSON.stringify(retry.forkOf)}, children ${JSON.stringify(retry.children?.map((child) => child.id))}; ` +
      `"quick part" asked ${asked('quick part')} times`,
  );
  expect(asked('quick part')).toBe(1);
}, 120_000);
