import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { TaskTelemetry } from './task-telemetry.js';

function setup() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const metrics = createMetrics();
  const telemetry = new TaskTelemetry({ logger: createLogger({ name: 't', format: 'json', destination }), metrics });
  const ended = async () => (await metrics.tasksEnded.get()).values.map(({ labels, value }) => ({ ...labels, value }));
  return { lines, metrics, telemetry, ended };
}

describe('TaskTelemetry', () => {
  it("counts a subtask's end once: its copy in its root's stream is not another end", async () => {
    const { telemetry, ended, lines } = setup();
    telemetry.observe({
      taskId: 'sub',
      events: [{ type: 'task.completed', agent: 'coder', data: { result: 'ok', steps: 2 } }],
    });
    telemetry.observe({
      taskId: 'root',
      events: [{ type: 'task.completed', taskId: 'sub', agent: 'coder', data: { subtaskId: 'sub', result: 'ok' } }],
    });
    expect(await ended()).toEqual([{ agent: 'coder', status: 'completed', reason: '', value: 1 }]);
    expect(lines.filter((line) => line.msg === 'task ended')).toHaveLength(1);
  });

  it('says a subtask skipped for its needs is skipped, with the reason', async () => {
    const { telemetry, ended } = setup();
    telemetry.observe({
      taskId: 'sub',
      events: [{ type: 'task.failed', data: { skipped: true, reason: 'a need failed' } }],
    });
    expect(await ended()).toEqual([{ agent: 'unknown', status: 'skipped', reason: 'needs_failed', value: 1 }]);
  });

  it('adds a run to its earlier tokens, counts its cost, times it from its first start, and forgets it when it ends', async () => {
    const { telemetry, lines, metrics } = setup();
    const startedAt = Date.now() - 5_000;
    telemetry.runStarted({
      taskId: 't',
      rootId: 'r',
      agent: 'casual',
      attempt: 2,
      resumed: true,
      startedAt,
      promptTokens: 100,
      completionTokens: 10,
      announce: true,
    });
    telemetry.observe({
      taskId: 't',
      events: [
        { type: 'llm.request', data: { model: 'm', messages: 2, tools: 0 } },
        {
          type: 'llm.response',
          data: {
            content: 'x',
            toolCalls: [],
            usage: { promptTokens: 7, completionTokens: 3 },
            finishReason: 'stop',
            durationMs: 12,
            costUsd: 0.25,
          },
        },
        { type: 'task.completed', data: { result: 'x', steps: 3 } },
      ],
    });
    expect((await metrics.cost.get()).values).toEqual([{ labels: { model: 'm' }, value: 0.25 }]);
    const end = lines.find((line) => line.msg === 'task ended');
    expect(end).toMatchObject({
      taskId: 't',
      rootId: 'r',
      agent: 'casual',
      status: 'completed',
      steps: 3,
      promptTokens: 107,
      completionTokens: 13,
    });
    expect(end!.durationMs).toBeGreaterThanOrEqual(5_000);
    // The run is forgotten: a later line about the task knows only what its events say.
    telemetry.observe({
      taskId: 't',
      events: [{ type: 'task.failed', data: { error: { code: 'error', message: 'x' } } }],
    });
    expect(lines.at(-1)).not.toHaveProperty('rootId');
  });

  it("counts a tool call by its tool's name only for a tool it runs: a name a model made up is unknown", async () => {
    const metrics = createMetrics();
    const telemetry = new TaskTelemetry({
      logger: createLogger({
        name: 't',
        format: 'json',
        destination: new Writable({ write: (_chunk, _encoding, done) => done() }),
      }),
      metrics,
      toolNames: new Set(['bash']),
    });
    const result = (name: string, ok: boolean) => ({
      type: 'tool.result' as const,
      data: { id: name, name, ok, output: '', durationMs: 3 },
    });
    telemetry.observe({
      taskId: 't',
      events: [result('bash', true), ...Array.from({ length: 50 }, (_, index) => result(`made_up_${index}`, false))],
    });
    const series = (await metrics.toolCallDuration.get()).values.filter(
      (value) => value.metricName === 'agentq_tool_call_duration_seconds_count',
    );
    expect(series.map(({ labels, value }) => ({ ...labels, value }))).toEqual([
      { tool: 'bash', ok: 'true', value: 1 },
      { tool: 'unknown', ok: 'false', value: 50 },
    ]);
  });

  it('never throws into the write path, whatever an event holds', () => {
    const { telemetry, lines } = setup();
    expect(() => telemetry.observe({ taskId: 't', events: [{ type: 'llm.response', data: null }] })).not.toThrow();
    expect(lines.at(-1)).toMatchObject({ level: 'warn', msg: 'telemetry could not read an event' });
  });
});
