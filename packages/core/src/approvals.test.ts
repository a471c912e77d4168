/**
 * The loop's side of approvals, with both protocols: a step whose calls need a person runs none of them
 * and ends as `approval`; run again with the decisions, an approved call runs once and a rejected one
 * is answered to the model with the reason.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel, type ScriptedModel } from '@agentq/llm';
import { BUILTIN_TOOLS, type ApprovalDecision, type ToolProtocolName } from '@agentq/contract';
import { builtinTools, createToolSettings } from '@agentq/tools';
import { createMemoryJournal, type AgentJournal } from './journal.js';
import { protocolFor } from './protocols.js';
import { runAgent } from './run-agent.js';
import type { AgentOutcome } from './agent-outcome.js';

let workdir: string;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-approvals-'));
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

const rules = [{ tool: 'bash' }];

function run(
  model: ScriptedModel,
  journal: AgentJournal,
  protocol: ToolProtocolName,
  decided?: Record<string, ApprovalDecision>,
  started?: string[],
) {
  return runAgent({
    model,
    journal,
    protocol: protocolFor(protocol),
    tools: builtinTools(BUILTIN_TOOLS),
    systemPrompt: 'sys',
    prompt: 'the goal',
    toolContext: createToolSettings({ workdir, isolation: { kind: 'none' } }),
    maxSteps: 10,
    signal: new AbortController().signal,
    approvals: {
      rules,
      ...(decided
        ? { decided: { step: 1, calls: new Map(Object.entries(decided)), ...(started ? { started } : {}) } }
        : {}),
    },
  }).then(flatInterrupt);
}

/** An approval interrupt's payload beside its status, as these cases read it. */
function flatInterrupt(outcome: AgentOutcome) {
  return outcome.status === 'interrupted' ? { status: outcome.interrupt.kind, ...outcome.interrupt } : outcome;
}

describe('approvals in the loop', () => {
  it('runs nothing of a step until every call a rule holds is decided, then runs what was approved once', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'w', name: 'write_file', arguments: { path: 'note.txt', content: 'x' } },
            { id: 'a', name: 'bash', arguments: { command: 'echo a >> log.txt' } },
            { id: 'b', name: 'bash', arguments: { command: 'echo b >> log.txt' } },
          ],
        },
        { content: 'done' },
      ],
    });
    const journal = createMemoryJournal();
    expect(await run(model, journal, 'native')).toMatchObject({
      status: 'approval',
      step: 1,
      calls: [
        { id: 'a', name: 'bash', rule: 'every bash call' },
        { id: 'b', name: 'bash', rule: 'every bash call' },
      ],
    });
    // Not even the call no rule holds ran: the step runs as one, once decided.
    expect(existsSync(path.join(workdir, 'note.txt'))).toBe(false);
    // One decided: it still waits for the other.
    expect(await run(model, journal, 'native', { a: { approve: true } })).toMatchObject({
      status: 'approval',
      calls: [{ id: 'b' }],
    });
    expect(existsSync(path.join(workdir, 'log.txt'))).toBe(false);

    const outcome = await run(model, journal, 'native', {
      a: { approve: true },
      b: { approve: false, reason: 'one line is enough' },
    });
    expect(outcome).toMatchObject({ status: 'completed', answer: 'done' });
    expect(await readFile(path.join(workdir, 'log.txt'), 'utf8')).toBe('a\n');
    const results = model.requests.at(-1)!.messages.filter((message) => message.role === 'tool');
    expect(results.map((message) => message.content)).toEqual([
      expect.stringMatching(/^Wrote/),
      expect.any(String),
      expect.stringMatching(/^Not run: .*a person rejected it: one line is enough/),
    ]);
  });

  it('gives calls that share an id, or have none, an id each: a decision runs one call', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'x', name: 'bash', arguments: { command: 'echo a >> log.txt' } },
            { id: 'x', name: 'bash', arguments: { command: 'echo b >> log.txt' } },
            { id: '', name: 'bash', arguments: { command: 'echo c >> log.txt' } },
          ],
        },
        { content: 'done' },
      ],
    });
    const journal = createMemoryJournal();
    expect(await run(model, journal, 'native')).toMatchObject({
      status: 'approval',
      calls: [{ id: 'x' }, { id: 'x_2' }, { id: 'call_1_3' }],
    });
    expect(await run(model, journal, 'native', { x: { approve: true } })).toMatchObject({
      status: 'approval',
      calls: [{ id: 'x_2' }, { id: 'call_1_3' }],
    });
    const outcome = await run(model, journal, 'native', {
      x: { approve: true },
      x_2: { approve: false },
      call_1_3: { approve: false },
    });
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workdir, 'log.txt'), 'utf8')).toBe('a\n');
    // The model reads each result under the id its call is stored with.
    const messages = model.requests.at(-1)!.messages;
    const asked = messages.flatMap((message) => (message.role === 'assistant' ? (message.toolCalls ?? []) : []));
    const answered = messages.flatMap((message) => (message.role === 'tool' ? [message.toolCallId] : []));
    expect(asked.map((call) => call.id)).toEqual(['x', 'x_2', 'call_1_3']);
    expect(answered).toEqual(['x', 'x_2', 'call_1_3']);
  });

  it('does not run a call that an earlier call of its step brought under a rule (a link to a held folder)', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'link', name: 'bash', arguments: { command: 'mkdir deploy && ln -s deploy innocent' } },
            { id: 'write', name: 'write_file', arguments: { path: 'innocent/app.yaml', content: 'x' } },
          ],
        },
        { content: 'done' },
      ],
    });
    const outcome = await runAgent({
      model,
      journal: createMemoryJournal(),
      tools: builtinTools(BUILTIN_TOOLS),
      systemPrompt: 'sys',
      prompt: 'the goal',
      toolContext: createToolSettings({ workdir, isolation: { kind: 'none' } }),
      maxSteps: 10,
      signal: new AbortController().signal,
      approvals: { rules: [{ tool: 'write_file', argument: 'path', matches: '^deploy/' }] },
    });
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workdir, 'deploy/app.yaml'))).toBe(false);
    const results = model.requests.at(-1)!.messages.filter((message) => message.role === 'tool');
    expect(results.at(-1)!.content).toMatch(
      /^Not run: the calls before it .* now needs a person's approval \(write_file with path matching \/\^deploy\/\/ \(deploy\/app\.yaml\)\)/,
    );
  });

  it('holds fenced blocks the same way, and tells the model of a rejection in its feedback', async () => {
    const model = createScriptedModel({
      script: [{ content: 'Running it:\n```bash\necho ran > fenced.txt\n```' }, { content: 'done' }],
    });
    const journal = createMemoryJournal();
    expect(await run(model, journal, 'fences')).toMatchObject({
      status: 'approval',
      calls: [{ id: 'fence-1-1', name: 'bash', arguments: JSON.stringify({ command: 'echo ran > fenced.txt' }) }],
    });
    const outcome = await run(model, journal, 'fences', { 'fence-1-1': { approve: false, expired: true } });
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workdir, 'fenced.txt'))).toBe(false);
    expect(String(model.requests.at(-1)!.messages.at(-1)!.content)).toMatch(
      /\[failure\] .*Not run: this call needs a person's approval, and nobody approved it in time/s,
    );
  });

  it('records an approved call as begun before it runs, and a run that resumes its step does not run it again', async () => {
    const model = createScriptedModel({
      script: [
        {
          toolCalls: [
            { id: 'a', name: 'bash', arguments: { command: 'echo a >> log.txt' } },
            { id: 'b', name: 'bash', arguments: { command: 'echo b >> log.txt' } },
          ],
        },
        { content: 'done' },
      ],
    });
    const memory = createMemoryJournal();
    // What was written when: the start of `b` goes out by itself, before `b` runs.
    const writes: string[] = [];
    const journal: AgentJournal = {
      load: () => memory.load(),
      async commit(entry) {
        if (entry.startedCalls)
          writes.push(`started ${entry.startedCalls.ids.join(',')}${entry.lazy ? ' (lazy)' : ''}`);
        for (const event of entry.events ?? [])
          if (event.type === 'tool.result') writes.push(`result ${event.data.id}`);
        await memory.commit(entry);
      },
    };
    expect(await run(model, journal, 'native')).toMatchObject({ status: 'approval' });
    // `a` began in a run whose worker died; `b` was approved too and never began.
    const outcome = await run(model, journal, 'native', { a: { approve: true }, b: { approve: true } }, ['a']);
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workdir, 'log.txt'), 'utf8')).toBe('b\n');
    expect(writes).toEqual(['result a', 'started a,b', 'result b']);
    expect(memory.startedCalls).toEqual({ step: 1, ids: ['a', 'b'] });
    const results = model.requests.at(-1)!.messages.filter((message) => message.role === 'tool');
    expect(results[0]!.content).toMatch(
      /^Not run again: this call was approved and started, but the worker running it stopped before it ended, so it may have run in part or in whole/,
    );
  });
});
