/**
 * A task's tree as one event stream (`GET /v1/tasks/:id/events?descendants=true`): a `lead` starts two
 * children, one of which starts a grandchild, all while a reader follows; the reader gets every task's
 * events, each with its own taskId and gapless seqs, and the stream ends once all have ended. Cut
 * anywhere, it resumes from its last `id:` with nothing missed or repeated; the JSON answer and the
 * client library say the same. Real API and worker processes, the wire double as every model.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type AgentqClient } from '@agentq/client';
import { isLiveDelta, treeCursorOf, type TaskEvent } from '@agentq/contract';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { readSse, readSseUntil, waitForEvent, type SseMessage } from '../helpers/sse.js';

const prefix = freshPrefix('tree-events');
let double: OpenAIDouble;
let dataDir: string;
let baseUrl: string;
let client: AgentqClient;

/** Children's models answer once this is let go (a test holds them running). */
let release: () => void = () => undefined;
let held = Promise.resolve();
const hold = () => {
  held = new Promise<void>((resolve) => (release = resolve));
};

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const lastTool = (request: DoubleRequest) =>
  String(request.messages.findLast((message) => message.role === 'tool')?.content ?? '');
const delegateCall = (tasks: Array<{ agent: string; prompt: string }>) => ({
  toolCalls: [{ id: 'd1', name: 'delegate', arguments: { tasks } }],
});

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => prompt(request) === 'tree root' && !lastTool(request),
        reply: delegateCall([
          { agent: 'coder', prompt: 'child a' },
          { agent: 'writer', prompt: 'child b' },
        ]),
      },
      {
        match: (request) => prompt(request) === 'child a' && !lastTool(request),
        reply: async () => (await held, delegateCall([{ agent: 'writer', prompt: 'grandchild' }])),
      },
      {
        match: (request) => lastTool(request).startsWith('Every task you started has ended'),
        reply: { content: 'gathered' },
      },
      { reply: async (request) => (await held, { content: `answer to ${prompt(request)}` }) },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-tree-events-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'model-x',
    extra: {
      AGENTQ_CONFIG: configFile({
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['coder', 'writer'] },
          },
          coder: {
            description: 'codes',
            instructions: 'You code.',
            tools: ['delegate'],
            delegate: { agents: ['writer'] },
          },
          writer: { description: 'writes', instructions: 'You write.' },
        },
      }),
    },
  });
  const api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/, 60_000))[1]!;
  await spawnAgentq(['worker', '--pools', 'lead,coder,writer'], env).waitFor(/serving/, 60_000);
  client = createClient({ baseUrl });
}, 120_000);

afterAll(async () => {
  release();
  await stopSpawned();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const treeUrl = (id: string) => `${baseUrl}/v1/tasks/${id}/events?descendants=true`;

/** Each task's events, in the order the stream gave them. */
function byTask(events: readonly TaskEvent[]): Map<string, TaskEvent[]> {
  const tasks = new Map<string, TaskEvent[]>();
  for (const event of events) tasks.set(event.taskId, [...(tasks.get(event.taskId) ?? []), event]);
  return tasks;
}

/** Each task's own stream, read alone (its subtasks' ends repeated in it left out). */
async function ownEvents(taskId: string): Promise<TaskEvent[]> {
  const response = await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, { headers: { accept: 'application/json' } });
  return ((await response.json()) as TaskEvent[]).filter((event) => event.taskId === taskId);
}

const taskEvents = (messages: readonly SseMessage[]) =>
  messages.filter((message) => message.event !== 'llm.delta' && message.event !== 'tree.limit').map((m) => m.data);

/** A tree run to its end with a reader that followed it from before its children were started. */
let tree: { id: string; messages: SseMessage[] };

it("follows the task and every descendant started while it reads, each event with its own task's id and seq", async () => {
  hold();
  const [id] = await client.submit([{ prompt: 'tree root', agent: 'lead' }]);
  // The reader is in before any child exists: every one of them is found while it follows.
  const reading = readSse(treeUrl(id!));
  await waitForEvent(baseUrl, id!, 'task.waiting');
  release();
  const messages = await reading;
  tree = { id: id!, messages };

  const root = await client.get(id!);
  expect(root.status).toBe('completed');
  const children = root.children!.map((child) => child.id);
  const [childA] = children;
  const grandchildren = (await client.get(childA!)).children!.map((child) => child.id);
  expect(children).toHaveLength(2);
  expect(grandchildren).toHaveLength(1);
  const tasks = byTask(taskEvents(messages));
  expect([...tasks.keys()].sort()).toEqual([id!, ...children, ...grandchildren].sort());
  // Each task's events are those of its own stream, in order, from seq 1, none missing or repeated.
  for (const [taskId, events] of tasks) {
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => event.type)).toEqual((await ownEvents(taskId)).map((event) => event.type));
    expect(events.at(-1)!.type).toBe('task.completed');
  }
  // Every message's id is the tree's cursor after it: the last one names every task at its last seq.
  const last = messages.findLast((message) => message.id)!.id;
  const cursor = treeCursorOf(id!, last);
  expect(cursor.get(id!)).toBe(tasks.get(id!)!.length);
  for (const child of [...children, ...grandchildren]) expect(cursor.get(child)).toBe(tasks.get(child)!.length);
}, 120_000);

it('resumes from the last id read, wherever it was cut, with nothing missed or repeated', async () => {
  const whole = taskEvents(tree.messages);
  const read: TaskEvent[] = [];
  let lastId = '';
  // Cut after every seventh message, each time resumed from the last id read.
  for (let round = 0; round < 100; round++) {
    const { messages, ended } = await readSseUntil(
      treeUrl(tree.id),
      (so) => so.length >= 7,
      lastId ? { 'last-event-id': lastId } : {},
    );
    read.push(...taskEvents(messages));
    lastId = messages.findLast((message) => message.id)?.id ?? lastId;
    if (ended) break;
  }
  expect(read.map((event) => event.id).sort()).toEqual(whole.map((event) => event.id).sort());
  expect(new Set(read.map((event) => event.id)).size).toBe(read.length);
}, 60_000);

it('answers the same events as JSON, and after a cursor only the newer ones', async () => {
  const whole = taskEvents(tree.messages);
  const response = await fetch(treeUrl(tree.id), { headers: { accept: 'application/json' } });
  const events = (await response.json()) as TaskEvent[];
  expect(events.map((event) => event.id).sort()).toEqual(whole.map((event) => event.id).sort());
  expect(response.headers.get('agentq-tree-left-out')).toBeNull();
  // After the cursor of the tenth message: the rest.
  const tenth = tree.messages.filter((message) => message.id)[9]!;
  const after = (await (
    await fetch(`${treeUrl(tree.id)}&after=${encodeURIComponent(tenth.id)}`, {
      headers: { accept: 'application/json' },
    })
  ).json()) as TaskEvent[];
  const seenByTenth = new Set(
    tree.messages
      .slice(0, tree.messages.indexOf(tenth) + 1)
      .filter((message) => message.id)
      .map((message) => message.data.id),
  );
  expect(after.map((event) => event.id).sort()).toEqual(
    whole
      .filter((event) => !seenByTenth.has(event.id))
      .map((event) => event.id)
      .sort(),
  );
}, 60_000);

it("gives the client library's events the tree with descendants: true", async () => {
  hold();
  const [id] = await client.submit([{ prompt: 'tree root', agent: 'lead' }]);
  const seen: TaskEvent[] = [];
  const following = (async () => {
    for await (const event of client.events(id!, { descendants: true })) {
      if (event.type === 'tree.limit' || isLiveDelta(event)) continue;
      seen.push(event);
    }
  })();
  await waitForEvent(baseUrl, id!, 'task.waiting');
  release();
  await following;
  const tasks = byTask(seen);
  expect(tasks.size).toBe(4);
  for (const events of tasks.values()) expect(events.at(-1)!.type).toBe('task.completed');
}, 120_000);
