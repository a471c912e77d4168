/**
 * A person's decision on a call that sits beside a `delegate` call in one answer. The model asks, in
 * one message, for a `delegate` call and then a `bash` call an approval rule holds: the task waits for
 * the person, who decides the bash call. Once decided, the delegate call starts its children and the
 * step pauses for them, and the decided call is answered "not run: the step paused for what an
 * earlier call started": an approved call never runs (proof.txt is not written), a rejected one is
 * never answered with the person's reason. The docs: "approved calls run, rejected ones are answered to
 * the model with the reason". Real API and worker (bash in the jail), the wire double as every model.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type AgentqClient } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEvent, type SseMessage } from '../helpers/sse.js';

let fleet: Fleet;
let client: AgentqClient;

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const steps = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'assistant').length;

beforeAll(async () => {
  fleet = await startFleet({
    name: 'delegate-beside-approval',
    model: 'hostile-model',
    workers: 1,
    pools: 'ops,helper',
    env: {
      AGENTQ_CONFIG: configFile({
        agents: {
          ops: {
            description: 'runs commands a person approves, and hands parts to a helper',
            instructions: 'You run commands.',
            tools: ['delegate', 'bash'],
            delegate: { agents: ['helper'] },
            approvals: { rules: [{ tool: 'bash' }] },
          },
          helper: { description: 'helps', instructions: 'You help.' },
        },
      }),
    },
    rules: [
      {
        match: (request) => prompt(request) === 'deploy' && steps(request) === 0,
        reply: {
          toolCalls: [
            { id: 'd1', name: 'delegate', arguments: { tasks: [{ agent: 'helper', prompt: 'check the notes' }] } },
            { id: 'b1', name: 'bash', arguments: { command: 'echo deployed > proof.txt' } },
          ],
        },
      },
      { reply: { content: 'done' } },
    ],
  });
  client = createClient({ baseUrl: fleet.baseUrl });
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
});

/** The bash call's result, once the task that held it for `decision` has ended. */
async function decided(decision: { approve: boolean; reason?: string }) {
  const [id] = await client.submit([{ prompt: 'deploy', agent: 'ops' }]);
  await waitForEvent(fleet.baseUrl, id!, 'task.waiting');
  await client.decide(id!, { callId: 'b1', ...decision });
  const events: SseMessage[] = await waitForEnd(fleet.baseUrl, id!);
  expect(events.at(-1)!.event).toBe('task.completed');
  type ToolResult = { id: string; ok: boolean; output: string; skipped?: boolean };
  const results = events.filter((event) => event.event === 'tool.result').map((event) => event.data.data as ToolResult);
  return { id: id!, result: results.find((result) => result.id === 'b1')! };
}

it('runs a call a person approved, beside a delegate call', async () => {
  const { id, result } = await decided({ approve: true });
  console.log(`approved bash call answered: ${JSON.stringify(result)}`);
  expect((await client.get(id)).children).toHaveLength(1);
  expect(result.skipped).toBeFalsy();
  expect((await client.files.list(id)).files.map((file) => file.path)).toContain('proof.txt');
}, 120_000);

it("answers a call a person rejected with the person's reason, beside a delegate call", async () => {
  const { result } = await decided({ approve: false, reason: 'not on a Friday' });
  console.log(`rejected bash call answered: ${JSON.stringify(result)}`);
  expect(result.output).toContain('not on a Friday');
}, 120_000);
