/** The loop's rules (stop conditions, cancellation, normalisation, compaction, ask_user), through the real loop. */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel, type ModelRequest } from '@agentq/llm';
import { SUMMARY_MARKER, type Message, type ToolMessage } from '@agentq/protocol';
import { BUILTIN_TOOLS } from '@agentq/contract';
import { builtinTools, createToolSettings, defineTool } from '@agentq/tools';
import { z } from 'zod';
import { createMemoryJournal } from './journal.js';
import { runAgent, type RunAgentOptions } from './run-agent.js';
import { timeBudgetIs, tokenBudgetIs } from './stop-conditions.js';

let workdir: string;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-rules-'));
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

const base = (overrides: Partial<RunAgentOptions> & Pick<RunAgentOptions, 'model'>): RunAgentOptions => ({
  tools: builtinTools(BUILTIN_TOOLS),
  journal: createMemoryJournal(),
  systemPrompt: 'sys',
  prompt: 'the goal',
  toolContext: createToolSettings({ workdir, isolation: { kind: 'none' } }),
  maxSteps: 20,
  signal: new AbortController().signal,
  ...overrides,
});

const bash = (command: string, id?: string) => ({
  toolCalls: [{ name: 'bash', arguments: { command }, ...(id ? { id } : {}) }],
});

describe('stop conditions', () => {
  it('fails with reason budget when the token budget is used up', async () => {
    const model = createScriptedModel({
      script: [
        { ...bash('true'), usage: { promptTokens: 1_600, completionTokens: 50 } },
        { ...bash('true'), usage: { promptTokens: 1_700, completionTokens: 50 } },
        { content: 'never' },
      ],
    });
    const outcome = await runAgent(base({ model, stopWhen: [tokenBudgetIs(3_000)] }));
    expect(outcome).toEqual({
      status: 'failed',
      reason: 'budget',
      message: 'Stopped: the task used 3400 tokens of its budget of 3000.',
      steps: 2,
    });
  });

  it('fails with reason budget before a call whose prompt alone would pass the token budget', async () => {
    const model = createScriptedModel({ script: [{ content: 'never' }] });
    // The system prompt, the tools' schemas and the prompt hold more than 500 tokens.
    const outcome = await runAgent(base({ model, prompt: 'word '.repeat(600), stopWhen: [tokenBudgetIs(500)] }));
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'budget',
      message: expect.stringMatching(
        /^Stopped: the task used 0 tokens of its budget of 500, and its next call's prompt alone holds \d+ more\.$/,
      ),
      steps: 0,
    });
    expect(model.requests).toHaveLength(0);
  });

  it('counts the tokens of earlier attempts against the budget', async () => {
    const model = createScriptedModel({ script: [{ content: 'never' }] });
    const outcome = await runAgent(
      base({ model, stopWhen: [tokenBudgetIs(1_000)], usage: { promptTokens: 900, completionTokens: 200 } }),
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget' });
    expect(model.requests).toHaveLength(0);
  });

  it('fails with reason budget past the wall-clock budget, counted from the first start', async () => {
    const model = createScriptedModel({ script: [{ content: 'never' }] });
    const outcome = await runAgent(base({ model, stopWhen: [timeBudgetIs(60_000)], startedAt: Date.now() - 61_000 }));
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'budget',
      message: expect.stringMatching(/past its time budget of 60 s/),
    });
  });
});

describe('cancellation', () => {
  it('kills the running tool, records what ran, and runs nothing after it', async () => {
    const controller = new AbortController();
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'a', name: 'bash', arguments: { command: 'echo first' } },
            { id: 'b', name: 'bash', arguments: { command: 'sleep 600000' } },
            { id: 'c', name: 'bash', arguments: { command: 'touch after.txt' } },
          ],
        },
      ],
    });
    const journal = createMemoryJournal();
    const running = runAgent(base({ model, journal, signal: controller.signal }));
    // Cancel once the slow tool has started.
    while (!journal.events.some((event) => event.type === 'tool.call' && event.data.id === 'b'))
      await new Promise((resolve) => setImmediate(resolve));
    // The tool sleeps for days: the run ends only because the cancel killed it.
    controller.abort();
    expect(await running).toEqual({ status: 'cancelled', steps: 1 });
    const results = journal.messages.filter((message): message is ToolMessage => message.role === 'tool');
    expect(results.map((result) => [result.toolCallId, result.content])).toEqual([
      ['a', 'first'],
      ['b', '(no output)\n[cancelled: the task was cancelled while this ran]'],
    ]);
    expect(journal.events.filter((event) => event.type === 'tool.call').map((event) => event.data.id)).toEqual([
      'a',
      'b',
    ]);
    expect(journal.events.some((event) => event.type === 'step.completed')).toBe(false);
  });
});

describe('normalisation before every model call', () => {
  it('answers a tool call left without a result with (cancelled), drops internal fields, merges user messages', async () => {
    const journal = createMemoryJournal([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'the goal' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'lost', name: 'bash', arguments: '{"command":"true"}' }] },
      { role: 'user', content: 'feedback', _feedback: true },
      { role: 'user', content: 'and an answer' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'kept', name: 'bash', arguments: '{"command":"exit 1"}' }],
      },
      { role: 'tool', toolCallId: 'kept', name: 'bash', content: 'failed', _isError: true },
    ]);
    const model = createScriptedModel({ script: [{ content: 'done' }] });
    await runAgent(base({ model, journal }));
    const sent = model.requests[0]!.messages as Message[];
    expect(sent.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
    ]);
    expect(sent[3]).toEqual({ role: 'tool', toolCallId: 'lost', name: 'bash', content: '(cancelled)' });
    expect(sent[4]).toEqual({ role: 'user', content: 'feedback\n\nand an answer' });
    expect(sent[6]).toEqual({ role: 'tool', toolCallId: 'kept', name: 'bash', content: 'failed' });
  });
});

describe('context compaction', () => {
  const bigOutput = (n: number) => `python3 -c "print('line ${n} ' * 400)"`;

  function checkPairs(request: ModelRequest) {
    const calls = new Set(
      request.messages.flatMap((message) =>
        message.role === 'assistant' ? (message.toolCalls ?? []).map((call) => call.id) : [],
      ),
    );
    for (const message of request.messages)
      if (message.role === 'tool') expect(calls.has(message.toolCallId)).toBe(true);
  }

  /** An agent that runs `steps` in turn, and a summariser told apart by its system prompt. */
  function agentAndSummariser(steps: Array<ReturnType<typeof bash> | { content: string }>) {
    const summariserRequests: ModelRequest[] = [];
    let next = 0;
    const model = createScriptedModel({
      script: Array.from({ length: 40 }, () => (request: ModelRequest) => {
        if (request.messages[0]?.content === 'You summarise.') {
          summariserRequests.push(request);
          return {
            content: `<think>hmm</think>S${summariserRequests.length}`,
            usage: { promptTokens: 50, completionTokens: 10 },
          };
        }
        return steps[next++] ?? { content: 'final' };
      }),
    });
    return {
      model,
      summariserRequests,
      agentRequests: () => model.requests.filter((request) => request.messages[0]?.content !== 'You summarise.'),
    };
  }

  it('summarises older steps past the limit, keeping the goal and the latest steps verbatim', async () => {
    const { model, summariserRequests, agentRequests } = agentAndSummariser([
      bash(bigOutput(1), 's1'),
      bash(bigOutput(2), 's2'),
      bash(bigOutput(3), 's3'),
      bash(bigOutput(4), 's4'),
    ]);
    const journal = createMemoryJournal();
    const outcome = await runAgent(
      base({ model, journal, compaction: { limit: 3_000, keepSteps: 2, prompt: 'You summarise.' } }),
    );
    expect(outcome).toMatchObject({ status: 'completed', answer: 'final' });

    const compactions = journal.events.filter((event) => event.type === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    for (const compaction of compactions) {
      expect(compaction.data.tokensBefore as number).toBeGreaterThan(3_000);
      expect(compaction.data.tokensAfter as number).toBeLessThan(compaction.data.tokensBefore as number);
    }
    expect(summariserRequests[0]!.messages[1]!.content).toMatch(/\[calls bash\].*line 1/s);

    const last = agentRequests().at(-1)!;
    const [system, goal, summary, ...rest] = last.messages;
    expect(system).toEqual({ role: 'system', content: 'sys' });
    expect(goal).toEqual({ role: 'user', content: 'the goal' });
    // The reasoning of the summariser is cut; the summary is the assistant's, marked, not the user's.
    expect(summary).toEqual({ role: 'assistant', content: `${SUMMARY_MARKER}\nS${summariserRequests.length}` });
    // The latest two steps stay verbatim, each call with its result.
    expect(
      rest.flatMap((message) => (message.role === 'assistant' ? message.toolCalls!.map((call) => call.id) : [])),
    ).toEqual(['s3', 's4']);
    expect(rest.filter((message) => message.role === 'tool')).toHaveLength(2);
    checkPairs(last);
    // Memory stays append-only: the summarised steps are still stored.
    expect(journal.messages.filter((entry) => entry.role === 'tool')).toHaveLength(4);
    expect(journal.messages.filter((entry) => entry.role === 'compaction')).toHaveLength(compactions.length);
  });

  it('compacts when the provider reports more tokens than the local count', async () => {
    const model = createScriptedModel({
      script: [
        { ...bash('echo a', 'a'), usage: { promptTokens: 100, completionTokens: 5 } },
        { ...bash('echo b', 'b'), usage: { promptTokens: 100, completionTokens: 5 } },
        { ...bash('echo c', 'c'), usage: { promptTokens: 9_000, completionTokens: 5 } },
        { content: 'summary of a and b' },
        { content: 'final' },
      ],
    });
    const journal = createMemoryJournal();
    await runAgent(base({ model, journal, compaction: { limit: 8_000, keepSteps: 1, prompt: 'p' } }));
    const compaction = journal.events.find((event) => event.type === 'compaction');
    expect(compaction?.data.tokensBefore).toBeGreaterThan(9_000);
    expect(model.requests.at(-1)!.messages[2]!.content).toBe(`${SUMMARY_MARKER}\nsummary of a and b`);
  });

  it('keeps every message the user wrote and summarises the execution between them', async () => {
    const journal = createMemoryJournal([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'goal' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'q', name: 'ask_user', arguments: '{"question":"which?"}' }],
      },
      { role: 'tool', toolCallId: 'q', name: 'ask_user', content: 'lorem ipsum '.repeat(600) },
      { role: 'user', content: 'the second message' },
      { role: 'assistant', content: 'dolor sit '.repeat(900) },
      { role: 'user', content: 'go on' },
    ]);
    const { model, agentRequests } = agentAndSummariser([bash('echo 1', 'one'), bash('echo 2', 'two')]);
    await runAgent(base({ model, journal, compaction: { limit: 1_500, keepSteps: 1, prompt: 'You summarise.' } }));
    const last = agentRequests().at(-1)!;
    const said = last.messages.filter((message) => message.role === 'user').map((message) => message.content);
    expect(said).toEqual(['goal', 'the second message', 'go on']);
    const text = JSON.stringify(last.messages);
    expect(text).not.toContain('lorem ipsum');
    expect(text).not.toContain('dolor sit');
    const summaries = last.messages.filter(
      (message) => message.role === 'assistant' && message.content?.startsWith(SUMMARY_MARKER),
    );
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    // Summaries sit between the user's messages, in place of the execution they stand for.
    expect(last.messages.findIndex((message) => message.content === 'the second message')).toBeGreaterThan(
      last.messages.indexOf(summaries[0]!),
    );
    checkPairs(last);
  });
});

describe('asking the user', () => {
  it('stops at an ask_user call with the question; the calls after it do not run', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'q', name: 'ask_user', arguments: { question: 'Which file?' } },
            { id: 'after', name: 'bash', arguments: { command: 'touch after.txt' } },
          ],
        },
      ],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(base({ model, journal }));
    expect(outcome).toEqual({
      status: 'interrupted',
      interrupt: { kind: 'question', question: 'Which file?', callId: 'q' },
      steps: 1,
    });
    expect(journal.messages.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'after',
      content: 'not run: the step paused to ask the user',
    });
  });

  it('resumes with the answer as the ask_user result', async () => {
    const journal = createMemoryJournal([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'goal' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'q', name: 'ask_user', arguments: '{"question":"Which file?"}' }],
      },
      { role: 'tool', toolCallId: 'q', name: 'ask_user', content: 'The user answered: data.csv' },
    ]);
    const model = createScriptedModel({ script: [{ content: 'Using data.csv.' }] });
    const outcome = await runAgent(base({ model, journal }));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'Using data.csv.' });
    expect(model.requests[0]!.messages.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'q',
      name: 'ask_user',
      content: 'The user answered: data.csv',
    });
  });
});

describe("a file tool's system errors", () => {
  it('reach the model in its own paths: never the host path of its work directory', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'long', name: 'read_file', arguments: { path: `${'é'.repeat(128)}.txt` } },
            { id: 'gone', name: 'read_file', arguments: { path: 'missing/notes.txt' } },
          ],
        },
        { content: 'done' },
      ],
    });
    const journal = createMemoryJournal();
    await runAgent(base({ model, journal }));
    const results = journal.messages.filter((message): message is ToolMessage => message.role === 'tool');
    expect(results.map((result) => result.content)).toEqual([
      expect.stringContaining('at most 255 bytes (not characters). Use a shorter name'),
      expect.stringContaining('Check the path with list_files'),
    ]);
    for (const result of results) expect(result.content).not.toContain(workdir);
  });
});

describe('a call that starts children', () => {
  /** A stand-in for `delegate`: its call pauses the step on the children it names. */
  const starter = defineTool({
    name: 'delegate',
    description: 'starts tasks',
    schema: z.object({ tasks: z.array(z.string()) }),
    async run(args) {
      return { ok: true, output: 'started', interrupt: { kind: 'children', children: args.tasks } };
    },
  });

  it('lets the calls after it run, then pauses the step on its children; a second one is refused', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'd1', name: 'delegate', arguments: { tasks: ['a', 'b'] } },
            { id: 'w', name: 'write_file', arguments: { path: 'after.txt', content: 'x' } },
            { id: 'd2', name: 'delegate', arguments: { tasks: ['c'] } },
          ],
        },
      ],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(base({ model, journal, tools: [...builtinTools(BUILTIN_TOOLS), starter] }));
    expect(outcome).toEqual({
      status: 'interrupted',
      interrupt: { kind: 'children', callId: 'd1', children: ['a', 'b'] },
      steps: 1,
    });
    const answered = journal.messages.filter((message): message is ToolMessage => message.role === 'tool');
    // The write ran; the second delegate call was told; the first waits for its children's answers.
    expect(answered.map((message) => message.toolCallId)).toEqual(['w', 'd2']);
    expect(answered[1]!.content).toMatch(/^Only one delegate call a step/);
    expect(existsSync(path.join(workdir, 'after.txt'))).toBe(true);
  });
});
