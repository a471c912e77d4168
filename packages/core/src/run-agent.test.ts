import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel, LlmError } from '@agentq/llm';
import type { MemoryEntry, ToolMessage } from '@agentq/protocol';
import { toolsFor } from '@agentq/tools';
import { createMemoryJournal } from './journal.js';
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
    tools: toolsFor('coder'),
    journal: createMemoryJournal(),
    systemPrompt: 'You are a test agent.',
    prompt: 'Do the thing.',
    workdir,
    isolation: { kind: 'none' },
    maxSteps: 10,
    signal: new AbortController().signal,
    ...overrides,
  };
}

const toolResults = (messages: MemoryEntry[]) => messages.filter((message): message is ToolMessage => message.role === 'tool');

describe('runAgent', () => {
  it('completes with the answer when the model answers at once', async () => {
    const model = createScriptedModel({ script: [{ content: 'Done: 42', usage: { promptTokens: 10, completionTokens: 3 } }] });
    const journal = createMemoryJournal();
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome).toEqual({ status: 'completed', answer: 'Done: 42', steps: 1 });
    expect(journal.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    expect(journal.events.map((event) => event.type)).toEqual(['llm.request', 'llm.response', 'step.completed']);
    expect(journal.steps).toBe(1);
  });

  it('runs one tool call, returns its result to the model, then completes', async () => {
    const model = createScriptedModel({
      script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'out/hello.txt', content: 'hi there' } }] }, { content: 'Wrote it.' }],
    });
    const journal = createMemoryJournal();
    const outcome = await runAgent(options({ model, journal }));
    expect(outcome.status).toBe('completed');
    expect(await readFile(path.join(workdir, 'out/hello.txt'), 'utf8')).toBe('hi there');
    const secondRequest = model.requests[1]!;
    expect(secondRequest.messages.at(-1)).toMatchObject({ role: 'tool', name: 'write_file', content: 'Wrote 8 bytes to out/hello.txt' });
    expect(journal.events.map((event) => event.type)).toEqual([
      'llm.request', 'llm.response', 'tool.call', 'tool.result', 'step.completed',
      'llm.request', 'llm.response', 'step.completed',
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
    expect(result!.content).toMatch(/^Unknown tool "rm_rf"\. Available tools: bash, python, node, read_file, write_file, edit_file, list_files, http_fetch, memory_set, memory_get, memory_list, ask_user\./);
    expect(journal.events.find((event) => event.type === 'tool.result')?.data).toMatchObject({ ok: false });
  });

  it('answers malformed JSON arguments with what to fix, as a tool result', async () => {
    const model = createScriptedModel({
      script: [{ toolCalls: [{ name: 'bash', arguments: '{"command": "ls"' }] }, { toolCalls: [{ name: 'bash', arguments: { command: 'echo fixed' } }] }, { content: 'ok' }],
    });
    const journal = createMemoryJournal();
    await runAgent(options({ model, journal }));
    const [bad, good] = toolResults(journal.messages);
    expect(bad!.content).toMatch(/^The arguments of bash are not valid JSON \(.+\)\. Send them again as one JSON object, e\.g\. \{"command":"\.\.\."\}\.$/);
    expect(good!.content).toBe('fixed');
  });

  it('answers arguments that break the schema with the field and the problem', async () => {
    const model = createScriptedModel({ script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt' } }] }, { content: 'ok' }] });
    const journal = createMemoryJournal();
    await runAgent(options({ model, journal }));
    expect(toolResults(journal.messages)[0]!.content).toMatch(/^Invalid arguments for write_file: content: .*expected string/);
  });

  it('fails with reason max_steps when the model never stops calling tools', async () => {
    const loop = { toolCalls: [{ name: 'bash', arguments: { command: 'echo again' } }] };
    const model = createScriptedModel({ script: [loop, loop, loop, loop] });
    const outcome = await runAgent(options({ model, maxSteps: 3 }));
    expect(outcome).toEqual({ status: 'failed', reason: 'max_steps', message: expect.stringContaining('max steps 3'), steps: 3 });
    expect(model.requests).toHaveLength(3);
  });

  it('fails at once with the provider message on a non-retryable LLM error', async () => {
    const model = createScriptedModel({ script: [new LlmError({ code: 'unauthorized', status: 401, message: 'The LLM endpoint answered 401: bad key' })] });
    const outcome = await runAgent(options({ model }));
    expect(outcome).toMatchObject({ status: 'failed', reason: 'error', message: 'The LLM endpoint answered 401: bad key' });
  });

  it('throws a retryable LLM error so the job is tried again', async () => {
    const model = createScriptedModel({ script: [new LlmError({ code: 'server_error', status: 503, message: 'down' })] });
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

  it('stops before calling the model when cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const model = createScriptedModel({ script: [{ content: 'never' }] });
    const outcome = await runAgent(options({ model, signal: controller.signal }));
    expect(outcome.status).toBe('cancelled');
    expect(model.requests).toHaveLength(0);
  });
});
