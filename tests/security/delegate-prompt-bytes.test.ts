/**
 * A child's prompt, written by the model, against the size a prompt may have. A submit's prompt is at
 * most 200,000 bytes of UTF-8 (a 400 names its size); a `delegate` call's task prompt is checked in
 * characters (at most 100,000), so 99,999 three-byte characters ("€") make a child whose prompt is
 * 299,997 bytes, half again what any submit may store. Sizes are in bytes: the call must start nothing
 * and say why. Real API and worker processes, the wire double as every model.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

const WIDE_PROMPT = '€'.repeat(99_999);
let fleet: Fleet;

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const steps = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'assistant').length;

beforeAll(async () => {
  fleet = await startFleet({
    name: 'delegate-prompt-bytes',
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
          helper: { description: 'helps', instructions: 'You help.' },
        },
      }),
    },
    rules: [
      {
        match: (request) => prompt(request) === 'hand it over' && steps(request) === 0,
        reply: {
          toolCalls: [{ id: 'd1', name: 'delegate', arguments: { tasks: [{ agent: 'helper', prompt: WIDE_PROMPT }] } }],
        },
      },
      { reply: { content: 'done' } },
    ],
  });
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
});

it('refuses a child prompt a submit would refuse: 200,000 bytes at most, not characters', async () => {
  const client = createClient({ baseUrl: fleet.baseUrl });
  // The same prompt, submitted: refused by its bytes.
  const submitted = await fetch(`${fleet.baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: WIDE_PROMPT, agent: 'helper' }] }),
  });
  expect(submitted.status).toBe(400);

  const [id] = await client.submit([{ prompt: 'hand it over', agent: 'lead' }]);
  await waitForEnd(fleet.baseUrl, id!);
  const children = (await client.get(id!)).children ?? [];
  for (const child of children)
    console.log(`child ${child.id}: a prompt of ${Buffer.byteLength((await client.get(child.id)).prompt)} bytes`);
  expect(children).toHaveLength(0);
}, 120_000);
