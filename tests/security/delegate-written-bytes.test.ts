/**
 * Children as a side door round a tenant's `limits.mb`. A submit that would carry the tenant past what
 * its stored tasks may write to Redis is a 429 that stores nothing; a `delegate` call is checked against
 * depth, tasks a call, descendants and budget only. A tenant with `limits.mb: 1` submits one 12-byte
 * prompt; its model delegates 20 tasks of 100,000-character prompts, and all 20 are made: the tenant
 * then shows 6,111,836 bytes written against its 1,048,576 (each prompt stored in the child's record,
 * its messages and its events). Such a call must start nothing, as a submit of the same prompts would,
 * and say why to the model.
 * Real API and worker processes, the wire double as every model.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

const KEY = 'tenant-small-0123456789abcdef';
const LIMIT_BYTES = 1024 * 1024;
let fleet: Fleet;

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const steps = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'assistant').length;

beforeAll(async () => {
  fleet = await startFleet({
    name: 'delegate-written-bytes',
    model: 'hostile-model',
    workers: 1,
    pools: 'lead,helper',
    env: tenantsEnv(
      { small: { keys: [KEY], limits: { mb: 1 } } },
      {
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['helper'] },
          },
          helper: { description: 'helps', instructions: 'You help.' },
        },
      },
    ),
    rules: [
      {
        match: (request) => prompt(request) === 'fill it up' && steps(request) === 0,
        reply: {
          toolCalls: [
            {
              id: 'd1',
              name: 'delegate',
              arguments: {
                tasks: Array.from({ length: 20 }, (_, index) => ({
                  agent: 'helper',
                  prompt: `${index}`.padEnd(100_000, 'x'),
                })),
              },
            },
          ],
        },
      },
      { reply: { content: 'done' } },
    ],
  });
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
});

it('starts no children that would carry the tenant past its limits.mb', async () => {
  const client = createClient({ baseUrl: fleet.baseUrl, apiKey: KEY });
  const [id] = await client.submit([{ prompt: 'fill it up', agent: 'lead' }]);
  await waitForEnd(fleet.baseUrl, id!, { authorization: `Bearer ${KEY}` });
  const usage = (await (
    await fetch(`${fleet.baseUrl}/v1/usage`, { headers: { authorization: `Bearer ${KEY}` } })
  ).json()) as { writtenBytes: number };
  const children = (await client.get(id!)).children ?? [];
  console.log(`${children.length} children made; ${usage.writtenBytes} bytes written, limit ${LIMIT_BYTES}`);
  expect(children).toHaveLength(0);
  // (What it wrote past the limit is its own run's: the model's 2 MB answer that asked for the children,
  // in its memory and events; that stops the run before its next model call.) The call is answered
  // with why nothing started.
  const events = await (
    await fetch(`${fleet.baseUrl}/v1/tasks/${id}/events`, {
      headers: { authorization: `Bearer ${KEY}`, accept: 'application/json' },
    })
  ).json();
  const result = (events as Array<{ type: string; data: { output?: string } }>).find(
    (event) => event.type === 'tool.result',
  );
  expect(result?.data.output).toMatch(/^Nothing was started: these tasks would store .* of the 1\.00 MiB they may/);
}, 120_000);
