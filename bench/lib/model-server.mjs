/**
 * The model of the benchmarks: the OpenAI-wire double in a process of its own, so that its work is
 * not the measured process's. `--latency <ms>` delays every answer; `--script` picks the conversation:
 *
 *   single      every request is answered "done" (a single-step task)
 *   three-step  write a file, run bash on it, then answer (a 3-step task with 2 tools)
 *   five-step   write four files, one a step, then answer (a 5-step task of the file pool)
 *   diamond     the planner is answered with a diamond plan (1, then 2 and 3, then 4); the rest "done"
 *   usage       every request is answered "done", reporting 50 prompt and 100 completion tokens
 *   mixed       a task whose prompt starts with "multi" is three-step, any other single
 *   delegate    a task whose prompt starts with "lead" calls `delegate` for one child task (on agent
 *               `child`), then answers "done" with its result; a child's answer waits for `{ release: true }`
 *
 * IPC: it sends `{ ready: baseURL }`; `{ arrivals: [prompt...] }` is answered with when the first
 * request of each prompt arrived (ms since the epoch, sub-millisecond); `{ count: true }` with the
 * number of requests so far. With `--announce`, it sends `{ arrival: prompt, at }` as each first arrives.
 * With `--log`, it keeps every request's arrival and prompt: `{ log: true }` is answered with them all.
 * `--host` is the address it listens on (default 127.0.0.1).
 */
import { parseArgs } from 'node:util';
import { firstUserText, startOpenAIDouble } from '@agentq/llm';

const { values } = parseArgs({
  options: {
    latency: { type: 'string', default: '0' },
    script: { type: 'string', default: 'single' },
    announce: { type: 'boolean', default: false },
    log: { type: 'boolean', default: false },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
const log = values.log ? [] : undefined;
const announce = values.announce;
const delayMs = Number(values.latency);
const answer = (reply) => (delayMs ? { ...reply, delayMs } : reply);
const toolResults = (request) => request.messages.filter((message) => message.role === 'tool').length;

const arrivals = new Map();
let count = 0;
const record = {
  // Never answers: it notes the arrival of every request, then the rules below answer.
  match: (request) => {
    count++;
    const prompt = firstUserText(request);
    log?.push([performance.timeOrigin + performance.now(), prompt]);
    if (!arrivals.has(prompt)) {
      const at = performance.timeOrigin + performance.now();
      arrivals.set(prompt, at);
      if (announce) process.send({ arrival: prompt, at });
    }
    return false;
  },
  reply: { content: '' },
};
const scripts = {
  single: [{ reply: answer({ content: 'done' }) }],
  usage: [{ reply: answer({ content: 'done', usage: { promptTokens: 50, completionTokens: 100 } }) }],
  'three-step': [
    {
      match: (request) => toolResults(request) === 0,
      reply: answer({
        toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hello from a benchmark' } }],
      }),
    },
    {
      match: (request) => toolResults(request) === 1,
      reply: answer({ toolCalls: [{ name: 'bash', arguments: { command: 'wc -c a.txt' } }] }),
    },
    { reply: answer({ content: 'The file has 22 bytes.' }) },
  ],
  'five-step': [
    {
      match: (request) => toolResults(request) < 4,
      reply: (request) =>
        answer({
          toolCalls: [
            { name: 'write_file', arguments: { path: `part-${toolResults(request)}.txt`, content: 'a part' } },
          ],
        }),
    },
    { reply: answer({ content: 'Four parts written.' }) },
  ],
};
const diamond = [
  { id: '1', agent: 'casual', task: 'one', need: [] },
  { id: '2', agent: 'casual', task: 'two', need: ['1'] },
  { id: '3', agent: 'casual', task: 'three', need: ['1'] },
  { id: '4', agent: 'casual', task: 'four', need: ['2', '3'] },
];
scripts.diamond = [
  {
    match: (request) => String(request.messages[0]?.content).startsWith('You are the planner'),
    reply: answer({ content: `\`\`\`json\n${JSON.stringify({ plan: diamond })}\n\`\`\`` }),
  },
  ...scripts.single,
];
scripts.mixed = [
  ...scripts['three-step'].map((rule) => ({
    ...rule,
    match: (request) => firstUserText(request).startsWith('multi') && (rule.match?.(request) ?? true),
  })),
  ...scripts.single,
];
// Children's answers wait for the benchmark to let them go (it counts the parents waiting first).
let release;
const released = new Promise((resolve) => (release = resolve));
scripts.delegate = [
  {
    match: (request) => firstUserText(request).startsWith('lead') && toolResults(request) === 0,
    reply: (request) =>
      answer({
        toolCalls: [
          {
            name: 'delegate',
            arguments: { tasks: [{ agent: 'child', prompt: `child of ${firstUserText(request)}` }] },
          },
        ],
      }),
  },
  { match: (request) => firstUserText(request).startsWith('lead'), reply: answer({ content: 'done' }) },
  { reply: async () => (await released, answer({ content: 'a child answer' })) },
];
const rules = scripts[values.script];
if (!rules) throw new Error(`No script ${values.script}`);
const double = await startOpenAIDouble({ rules: [record, ...rules], host: values.host });
// The double keeps every request for tests; a benchmark sends too many to keep.
setInterval(() => double.requests.splice(0), 1_000).unref();
setInterval(() => double.receivedAt.splice(0), 1_000).unref();

process.on('message', (message) => {
  if (message?.arrivals) process.send({ arrivals: message.arrivals.map((prompt) => arrivals.get(prompt) ?? null) });
  if (message?.count) process.send({ count });
  if (message?.log) process.send({ log: log ?? [] });
  if (message?.release) release();
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: double.baseURL });
