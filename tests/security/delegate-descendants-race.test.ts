/**
 * Calls of one tree racing for its `maxDescendants`. The room is taken before the children are made and
 * given back when it is not there, so a call that does not fit holds room meanwhile: a call that fits,
 * made at the same moment, is refused for room that only refused calls took. A root (maxDescendants 20)
 * starts 8 children; at once, 7 of them ask for 13 tasks each (8 + 13 > 20: never fits) and 1 asks for
 * 12 (8 + 12 = 20: fits). The call that fits is refused, told "99 were started already" when 8 were
 * (8 + 7 x 13 taken by refused calls). A call past the limit starts nothing, so it takes nothing: the call that fits starts
 * its 12 whatever the others asked. Real API and worker processes, the wire double as every model.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

const FANS = 8;
let fleet: Fleet;
/** The fans' models answer together, once all of them have asked (one call each, at the same moment). */
let arrived = 0;
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const steps = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'assistant').length;
const lastTool = (request: DoubleRequest) =>
  String(request.messages.findLast((message) => message.role === 'tool')?.content ?? '');
const delegate = (count: number) => ({
  toolCalls: [
    {
      id: 'd1',
      name: 'delegate',
      arguments: { tasks: Array.from({ length: count }, (_, index) => ({ agent: 'leaf', prompt: `leaf ${index}` })) },
    },
  ],
});

beforeAll(async () => {
  const limits = { maxChildren: 20, maxDepth: 2, maxDescendants: 20 };
  fleet = await startFleet({
    name: 'delegate-descendants-race',
    model: 'hostile-model',
    workers: 1,
    pools: 'lead,fan,leaf',
    env: {
      AGENTQ_CONFIG: configFile({
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['fan'], ...limits },
          },
          // Every fan runs at once on the one worker.
          fan: {
            description: 'fans out',
            instructions: 'You fan out.',
            tools: ['delegate'],
            concurrency: FANS,
            delegate: { agents: ['leaf'], ...limits },
          },
          leaf: { description: 'leaf', instructions: 'You answer.' },
        },
      }),
    },
    rules: [
      {
        match: (request) => prompt(request) === 'fan out' && steps(request) === 0,
        reply: {
          toolCalls: [
            {
              id: 'd1',
              name: 'delegate',
              arguments: {
                tasks: Array.from({ length: FANS }, (_, index) => ({
                  agent: 'fan',
                  prompt: index === FANS - 1 ? 'fits' : 'too many',
                })),
              },
            },
          ],
        },
      },
      {
        match: (request) => ['fits', 'too many'].includes(prompt(request)) && steps(request) === 0,
        reply: async (request) => {
          if (++arrived === FANS) openGate();
          await gate;
          return delegate(prompt(request) === 'fits' ? 12 : 13);
        },
      },
      {
        match: (request) => prompt(request) === 'fits',
        reply: (request) => ({ content: `fits: ${lastTool(request)}` }),
      },
      { reply: { content: 'done' } },
    ],
  });
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
});

it('starts the call that fits the tree, whatever calls that do not fit ask at the same moment', async () => {
  const client = createClient({ baseUrl: fleet.baseUrl });
  const [id] = await client.submit([{ prompt: 'fan out', agent: 'lead' }]);
  expect((await waitForEnd(fleet.baseUrl, id!)).at(-1)!.event).toBe('task.completed');
  const fans = (await client.get(id!)).children ?? [];
  expect(fans).toHaveLength(FANS);
  const fitting = fans.at(-1)!;
  const answer = (await client.get(fitting.id)).result ?? '';
  console.log(`the fitting call was answered: ${answer.slice(0, 300)}`);
  expect((await client.get(fitting.id)).children ?? []).toHaveLength(12);
}, 120_000);
