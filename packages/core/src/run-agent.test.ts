import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel, LlmError } from '@agentq/llm';
import type { MemoryEntry, ToolMessage } from '@agentq/protocol';
import { BUILTIN_TOOLS } from '@agentq/contract';
import { builtinTools, createToolSettings } from '@agentq/tools';
import { createMemoryJournal, RunLostError, type AgentJournal } from './journal.js';
import { runAgent, type RunAgentOptions } from './run-agent.js';

let workdir: string;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-loop-'));
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

function options(overrides: Partial<RunAgentOptions> & Pick<RunAgentOptions, 'model'>): RunAgentOptions {
  return {
    tools: builtinTools(BUILTIN_TOOLS),
    journal: createMemoryJournal(),
    systemPrompt: 'You are a test agent.',
    prompt: 'Do the thing.',
    toolContext: createToolSettings({ workdir, isolation: { kind: 'none' } }),
    maxSteps: 10,
    signal: new AbortController().signal,
    ...overrides,
  };
}

const toolResults = (messages: MemoryEntry[]) =>
  messages.filter((message): message is ToolMessage => message.role === 'tool');

describe('runAgent', () => {
  it('stops as a lost run, not a cancel, when the journal refuses a write: no more model calls', async () => {
    const model = createScriptedModel({
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }] },
        { content: 'never asked' },
      ],
    });
    const memory = createMemoryJournal();
    // Another run took the task over while this one ran its tool: the step's results are refused.
    const journal: AgentJournal = {
      load: () => memory.load(),
      commit: async (entry) => {
        if (entry.messages?.some((message) => message.role === 'tool'))
          throw new RunLostError('t1', 'taken_over', 'running');
        await memory.commit(entry);
      },
    };
    const run = runAgent(options({ model, journal }));
    await expect(run).rejects.toBeInstanceOf(RunLostError);
    await expect(run).rejects.toMatchObject({ code: 'run_lost', reason: 'taken_over' });
    expect(model.requests).toHaveLength(1);
  });

  it('completes with the answer when the model answers at once', async () => {
    const model = createScriptedModel({
      script: [{ content: 'Done: 42', usage: { promptTokens: 10, completionTokens: 3 } }],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome).toEqual({ status: 'completed', answer: 'Done: 42', steps: 1 });
    expect(journal.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    expect(journal.events.map((event) => event.type)).toEqual(['llm.request', 'llm.response', 'step.completed']);
    expect(journal.steps).toBe(1);
  });

  it('runs one tool call, returns its result to the model, then completes', async () => {
    const model = createScriptedModel({
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'out/hello.txt', content: 'hi there' } }] },
        { content: 'Wrote it.' },
      ],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome.status).toBe('completed');
    expect(await readFile(path.join(workdir, 'out/hello.txt'), 'utf8')).toBe('hi there');
    const secondRequest = model.requests[1]!;
    expect(secondRequest.messages.at(-1)).toMatchObject({
      role: 'tool',
      name: 'write_file',
      content: 'Wrote 8 bytes to out/hello.txt',
    });
    expect(journal.events.map((event) => event.type)).toEqual([
      'llm.request',
      'llm.response',
      'tool.call',
      'tool.result',
      'step.completed',
      'llm.request',
      'llm.response',
      'step.completed',
    ]);
  });

  it('runs several tool calls of one message in order, each result linked by its tool_call_id', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'call_a', name: 'write_file', arguments: { path: 'a.txt', content: 'A\n' } },
            { id: 'call_b', name: 'bash', arguments: { command: 'cat a.txt; echo B' } },
            { id: 'call_c', name: 'list_files', arguments: {} },
          ],
        },
        { content: 'ok' },
      ],
    });
    const journal = createMemoryJournal();
    await runAgent(options({ model, journal }));
    const results = toolResults(journal.messages);
    expect(results.map((result) => result.toolCallId)).toEqual(['call_a', 'call_b', 'call_c']);
    expect(results[1]!.content).toBe('A\nB');
    expect(results[2]!.content).toBe('a.txt');
    // Normalised before the model sees it: the internal fields are gone and every call is answered.
    expect(model.requests[1]!.messages.filter((message) => message.role === 'tool')).toHaveLength(3);
  });

  it('answers an unknown tool with the list of tools, and the model recovers', async () => {
    const model = createScriptedModel({
      script: [{ toolCalls: [{ name: 'rm_rf', arguments: {} }] }, { content: 'Sorry, done without it.' }],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome.status).toBe('completed');
    const [result] = toolResults(journal.messages);
    expect(result!.content).toMatch(
      /^Unknown tool "rm_rf"\. Available tools: bash, python, node, read_file, write_file, edit_file, list_files, http_fetch, memory_set, memory_get, memory_list, ask_user\./,
    );
    expect(journal.events.find((event) => event.type === 'tool.result')?.data).toMatchObject({ ok: false });
  });

  it('answers malformed JSON arguments with what to fix, as a tool result', async () => {
    const model = createScriptedModel({
      script: [
        { toolCalls: [{ name: 'bash', arguments: '{"command": "ls"' }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo fixed' } }] },
        { content: 'ok' },
      ],
    });
    const journal = createMemoryJournal();
    await runAgent(options({ model, journal }));
    const [bad, good] = toolResults(journal.messages);
    expect(bad!.content).toMatch(
      /^The arguments of bash are not valid JSON \(.+\)\. Send them again as one JSON object, e\.g\. \{"command":"\.\.\."\}\.$/,
    );
    expect(good!.content).toBe('fixed');
  });

  it('answers arguments that break the schema with the field and the problem', async () => {
    const model = createScriptedModel({
      script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt' } }] }, { content: 'ok' }],
    });
    const journal = createMemoryJournal();
    await runAgent(options({ model, journal }));
    expect(toolResults(journal.messages)[0]!.content).toMatch(
      /^Invalid arguments for write_file: content: .*expected string/,
    );
  });

  it('fails with reason max_steps when the model never stops calling tools', async () => {
    const loop = { toolCalls: [{ name: 'bash', arguments: { command: 'echo again' } }] };
    const model = createScriptedModel({ script: [loop, loop, loop, loop] });
    const outcome = await runAgent(options({ model, maxSteps: 3 }));
    expect(outcome).toEqual({
      status: 'failed',
      reason: 'max_steps',
      message: expect.stringContaining('max steps 3'),
      steps: 3,
    });
    expect(model.requests).toHaveLength(3);
  });

  it('fails at once with the provider message on a non-retryable LLM error', async () => {
    const model = createScriptedModel({
      script: [new LlmError({ code: 'unauthorized', status: 401, message: 'The LLM endpoint answered 401: bad key' })],
    });
    const outcome = await runAgent(options({ model }));
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'error',
      message: 'The LLM endpoint answered 401: bad key',
    });
  });

  it('throws a retryable LLM error so the job is tried again', async () => {
    const model = createScriptedModel({
      script: [new LlmError({ code: 'server_error', status: 503, message: 'down' })],
    });
    await expect(runAgent(options({ model }))).rejects.toMatchObject({ code: 'server_error' });
  });

  it('resumes from its journal: finishes the unanswered tool calls without calling the model again for them', async () => {
    const journal = createMemoryJournal([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 'bash', arguments: '{"command":"echo one"}' },
          { id: 'c2', name: 'bash', arguments: '{"command":"echo two"}' },
        ],
      },
      { role: 'tool', toolCallId: 'c1', name: 'bash', content: 'one' },
    ]);
    const model = createScriptedModel({ script: [{ content: 'resumed and done' }] });
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome).toEqual({ status: 'completed', answer: 'resumed and done', steps: 2 });
    expect(model.requests).toHaveLength(1);
    expect(toolResults(journal.messages).map((result) => result.content)).toEqual(['one', 'two']);
    expect(journal.events.filter((event) => event.type === 'tool.call').map((event) => event.data.id)).toEqual(['c2']);
  });

  it('runs at most its cap of tool calls from one answer; the rest are answered "not run" with what to do', async () => {
    const calls = [1, 2, 3, 4, 5].map((n) => ({
      id: `c${n}`,
      name: 'bash',
      arguments: { command: `echo ${n} >> ran.txt` },
    }));
    const model = createScriptedModel({ script: [{ toolCalls: calls }, { content: 'done' }] });
    const journal = createMemoryJournal();
    const commits: number[] = [];
    const counting = {
      ...journal,
      commit: async (entry: Parameters<typeof journal.commit>[0]) => (
        commits.push(entry.events?.length ?? 0),
        journal.commit(entry)
      ),
    };
    const outcome = await runAgent(options({ model, journal: counting, maxToolCallsPerStep: 3 }));
    expect(outcome).toEqual({ status: 'completed', answer: 'done', steps: 2 });
    expect(await readFile(path.join(workdir, 'ran.txt'), 'utf8')).toBe('1\n2\n3\n');
    // Every call has its result (the API wants one per call id), in the next request too.
    const notRun = (n: number) =>
      `not run: one answer runs at most 3 tool calls, and this was call ${n} of 5. Call it again in your next answer if it is still needed.`;
    expect(
      toolResults(model.requests[1]!.messages as MemoryEntry[]).map((result) => [result.toolCallId, result.content]),
    ).toEqual([
      ['c1', '(no output)'],
      ['c2', '(no output)'],
      ['c3', '(no output)'],
      ['c4', notRun(4)],
      ['c5', notRun(5)],
    ]);
    expect(journal.events.filter((event) => event.type === 'tool.call').map((event) => event.data.id)).toEqual([
      'c1',
      'c2',
      'c3',
    ]);
    const skipped = journal.events.flatMap((event) =>
      event.type === 'tool.result' && event.data.skipped ? [[event.data.id, event.data.ok, event.data.output]] : [],
    );
    expect(skipped).toEqual([
      ['c4', false, notRun(4)],
      ['c5', false, notRun(5)],
    ]);
    // The two not run go out together, with the step's end.
    expect(journal.events.filter((event) => event.type === 'step.completed').map((event) => event.step)).toEqual([
      1, 2,
    ]);
    expect(commits).toContain(3);
  });

  it('answers thousands of calls past the cap in a few commits of bounded size', async () => {
    const calls = Array.from({ length: 600 }, (_, index) => ({ id: `c${index}`, name: 'list_files', arguments: {} }));
    const model = createScriptedModel({ script: [{ toolCalls: calls }, { content: 'done' }] });
    const journal = createMemoryJournal();
    const resultsPerCommit: number[] = [];
    const counting = {
      ...journal,
      commit: async (entry: Parameters<typeof journal.commit>[0]) => (
        resultsPerCommit.push((entry.events ?? []).filter((event) => event.type === 'tool.result').length),
        journal.commit(entry)
      ),
    };
    await runAgent(options({ model, journal: counting, maxToolCallsPerStep: 1 }));
    expect(resultsPerCommit.filter((count) => count > 0)).toEqual([1, 256, 256, 87]);
    expect(toolResults(model.requests[1]!.messages as MemoryEntry[])).toHaveLength(600);
  });

  it('keeps the cap when it resumes a step: only the calls within it run', async () => {
    const journal = createMemoryJournal([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [1, 2, 3, 4].map((n) => ({
          id: `c${n}`,
          name: 'bash',
          arguments: `{"command":"echo ${n} >> ran.txt"}`,
        })),
      },
      { role: 'tool', toolCallId: 'c1', name: 'bash', content: '(no output)' },
    ]);
    const model = createScriptedModel({ script: [{ content: 'resumed' }] });
    await runAgent(options({ model, journal, maxToolCallsPerStep: 2 }));
    expect(await readFile(path.join(workdir, 'ran.txt'), 'utf8')).toBe('2\n');
    expect(toolResults(journal.messages).map((result) => result.toolCallId)).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(
      toolResults(journal.messages)
        .slice(2)
        .map((result) => result.content),
    ).toEqual([
      'not run: one answer runs at most 2 tool calls, and this was call 3 of 4. Call it again in your next answer if it is still needed.',
      'not run: one answer runs at most 2 tool calls, and this was call 4 of 4. Call it again in your next answer if it is still needed.',
    ]);
  });

  it('stops before calling the model when cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const model = createScriptedModel({ script: [{ content: 'never' }] });
    const outcome = await runAgent(options({ model, signal: controller.signal }));
    expect(outcome.status).toBe('cancelled');
    expect(model.requests).toHaveLength(0);
  });
});
