/**
 * Logs and metrics from what a task's writes say. Every step of a task is already written as events
 * (the task store's commits); this reads the events of each commit this process made, and turns them
 * into log lines (a task's start, requeue, pause and end) and metrics (steps, model and tool calls,
 * tokens, ends), so nothing is measured twice and nothing a user sees differs from what is counted.
 *
 * A run tells it what its claim read (`runStarted`): the task's root, when it first started and the
 * tokens it had used, for the end's line. A task that ends outside a run (cancelled while queued, a
 * skipped subtask) is logged with what its events say.
 *
 * With tracing on, a run is a span (`run <agent> task`) in its task's trace (the traceparent its record
 * holds), and each model call (`chat <model>`, GenAI conventions) and tool call (`execute_tool <name>`)
 * a child span, timed from its event: the loop itself knows nothing of tracing.
 */
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { EventDataMap, EventType } from '@agentq/contract';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { Tracing } from './tracing.js';

/** An event as a commit wrote it (the store's StoredEventInput has this shape). */
export interface ObservedEvent {
  type: EventType;
  data: unknown;
  agent?: string;
  taskId?: string;
  at?: string;
}

/** One applied commit of a task. */
export interface ObservedWrite {
  taskId: string;
  events?: readonly ObservedEvent[];
}

export interface RunStart {
  taskId: string;
  rootId: string;
  agent: string;
  attempt: number;
  resumed: boolean;
  /** When the task first started (an earlier run's start, for a resumed task). */
  startedAt: number;
  promptTokens: number;
  completionTokens: number;
  /** Say `task started` (a planned task's end, run by its planner, is not a new start). */
  announce: boolean;
  /** Logged only with AGENTQ_LOG_PROMPTS. */
  prompt?: string;
  /** The task's trace context, as its record holds it. */
  traceparent?: string | undefined;
}

interface Running extends RunStart {
  model?: string;
  lastStepAt: number;
  span?: Span;
}

const ENDS: Partial<Record<EventType, 'completed' | 'failed' | 'cancelled'>> = {
  'task.completed': 'completed',
  'task.failed': 'failed',
  'task.cancelled': 'cancelled',
};

export class TaskTelemetry {
  private readonly running = new Map<string, Running>();

  /**
   * @param options.toolNames the tools this process runs. A tool call is counted (and its span named) by
   *   its tool's name only when it is one of them, else as `unknown`: a model names whatever it likes,
   *   and each new name would be new time series in every scrape. The event keeps the name it called.
   *   Default none.
   */
  constructor(
    private readonly options: { logger: Logger; metrics: Metrics; tracing?: Tracing; toolNames?: ReadonlySet<string> },
  ) {}

  /** A run claimed its task. */
  runStarted(start: RunStart): void {
    const now = Date.now();
    const tracing = this.options.tracing;
    const span = tracing?.enabled
      ? tracing.tracer.startSpan(
          `run ${start.agent} task`,
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              'agentq.task.id': start.taskId,
              'agentq.task.root_id': start.rootId,
              'agentq.agent': start.agent,
              'agentq.attempt': start.attempt,
              'agentq.resumed': start.resumed,
            },
          },
          tracing.contextOf(start.traceparent),
        )
      : undefined;
    this.running.set(start.taskId, { ...start, lastStepAt: now, ...(span ? { span } : {}) });
    const { taskId, rootId, agent, attempt, resumed, prompt } = start;
    if (start.announce)
      this.options.logger.info(
        { taskId, rootId, agent, attempt, resumed, ...(prompt !== undefined ? { prompt } : {}) },
        'task started',
      );
  }

  /** Runs `work` as part of a run's span (what it starts, e.g. a plan's subtasks, joins the task's trace). */
  within<T>(taskId: string, work: () => Promise<T>): Promise<T> {
    const span = this.running.get(taskId)?.span;
    return span ? context.with(trace.setSpan(context.active(), span), work) : work();
  }

  /**
   * A write of this process was refused: another run holds the task now (this worker lost its job,
   * stalled or cut off, and the task resumed elsewhere). Its run stops at once.
   */
  staleWrite(taskId: string): void {
    this.options.metrics.staleWrites.inc();
    this.options.logger.warn({ taskId }, 'a late write was refused: another run holds the task now, this run stops');
  }

  /** A run let go of its task: its span ends; nothing more is said of the run. */
  runReleased(taskId: string): void {
    this.running.get(taskId)?.span?.end();
    this.running.delete(taskId);
  }

  /** What an applied commit wrote. Never throws: telemetry must not break a task's write path. */
  observe(write: ObservedWrite): void {
    try {
      for (const event of write.events ?? []) this.event(write.taskId, event);
    } catch (error) {
      this.options.logger.warn({ err: error, taskId: write.taskId }, 'telemetry could not read an event');
    }
  }

  private event(taskId: string, event: ObservedEvent): void {
    // A subtask's end repeated in its root's stream was counted when the subtask's own was written.
    if (event.taskId !== undefined && event.taskId !== taskId) return;
    const { logger, metrics } = this.options;
    const run = this.running.get(taskId);
    const agent = event.agent ?? run?.agent ?? 'unknown';
    switch (event.type) {
      case 'llm.request': {
        if (run) run.model = (event.data as EventDataMap['llm.request']).model;
        return;
      }
      case 'llm.response': {
        const data = event.data as EventDataMap['llm.response'];
        const model = run?.model ?? 'unknown';
        metrics.modelCallDuration.observe({ model }, data.durationMs / 1000);
        this.childSpan(run, `chat ${model}`, event, data.durationMs, {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': model,
          ...(data.usage
            ? {
                'gen_ai.usage.input_tokens': data.usage.promptTokens,
                'gen_ai.usage.output_tokens': data.usage.completionTokens,
              }
            : {}),
          ...(data.costUsd !== undefined ? { 'agentq.cost_usd': data.costUsd } : {}),
          ...(data.finishReason ? { 'gen_ai.response.finish_reasons': [data.finishReason] } : {}),
        });
        if (data.costUsd) metrics.cost.inc({ model }, data.costUsd);
        if (data.usage) {
          metrics.tokens.inc({ model, kind: 'prompt' }, data.usage.promptTokens);
          metrics.tokens.inc({ model, kind: 'completion' }, data.usage.completionTokens);
          if (run) {
            run.promptTokens += data.usage.promptTokens;
            run.completionTokens += data.usage.completionTokens;
          }
        }
        return;
      }
      case 'tool.result': {
        const data = event.data as EventDataMap['tool.result'];
        if (data.skipped) return;
        const tool = this.options.toolNames?.has(data.name) ? data.name : 'unknown';
        metrics.toolCallDuration.observe({ tool, ok: String(data.ok) }, data.durationMs / 1000);
        this.childSpan(
          run,
          `execute_tool ${tool}`,
          event,
          data.durationMs,
          { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': data.name, 'gen_ai.tool.call.id': data.id },
          !data.ok,
        );
        return;
      }
      case 'step.completed': {
        const at = timeOf(event);
        if (run) {
          metrics.stepDuration.observe({ agent }, Math.max(0, at - run.lastStepAt) / 1000);
          run.lastStepAt = at;
        }
        return;
      }
      case 'task.queued': {
        const data = event.data as EventDataMap['task.queued'];
        // A requeue of a running task (a submission's and an answer's are not).
        if (data.retry === undefined && !data.rateLimited && data.reason === undefined) return;
        const reason =
          data.retry !== undefined
            ? 'retry'
            : data.rateLimited
              ? 'rate_limited'
              : data.modelUnreachable
                ? 'model_unreachable'
                : 'handed_back';
        metrics.tasksRequeued.inc({ agent, reason });
        run?.span?.addEvent('requeued', { reason });
        logger.warn(
          {
            taskId,
            ...(run ? { rootId: run.rootId } : {}),
            agent,
            reason,
            ...(data.retry !== undefined ? { attempt: data.retry } : {}),
            detail: data.reason,
          },
          'task requeued',
        );
        this.forget(taskId, run);
        return;
      }
      case 'task.waiting': {
        const data = event.data as EventDataMap['task.waiting'];
        logger.info(
          { taskId, ...(run ? { rootId: run.rootId } : {}), agent, steps: data.steps },
          'task paused: waiting for its user',
        );
        this.forget(taskId, run);
        return;
      }
      default: {
        const ended = ENDS[event.type];
        if (ended) this.ended(taskId, event, ended, agent, run);
      }
    }
  }

  private ended(
    taskId: string,
    event: ObservedEvent,
    type: 'completed' | 'failed' | 'cancelled',
    agent: string,
    run: Running | undefined,
  ): void {
    const data = event.data as EventDataMap['task.failed'] & EventDataMap['task.cancelled'];
    const status = data.skipped ? 'skipped' : type;
    const reason =
      type === 'failed'
        ? (data.error?.code ?? (data.skipped ? 'needs_failed' : 'error'))
        : type === 'cancelled'
          ? 'cancelled'
          : '';
    this.options.metrics.tasksEnded.inc({ agent, status, reason });
    run?.span?.setAttributes({ 'agentq.task.status': status, ...(reason ? { 'agentq.task.reason': reason } : {}) });
    if (type === 'failed') run?.span?.setStatus({ code: SpanStatusCode.ERROR, message: data.error?.message ?? reason });
    const line = {
      taskId,
      ...(run ? { rootId: run.rootId } : {}),
      agent,
      status,
      ...(reason ? { reason } : {}),
      ...(data.steps !== undefined ? { steps: data.steps } : {}),
      ...(run
        ? {
            promptTokens: run.promptTokens,
            completionTokens: run.completionTokens,
            durationMs: timeOf(event) - run.startedAt,
          }
        : {}),
      ...(type === 'failed' && data.error ? { error: data.error.message } : {}),
    };
    if (type === 'failed') this.options.logger.warn(line, 'task ended');
    else this.options.logger.info(line, 'task ended');
    this.forget(taskId, run);
  }

  /** What a run said last: its span stays until the run lets go of its task (runReleased). */
  private forget(taskId: string, run: Running | undefined): void {
    if (!run?.span) this.running.delete(taskId);
  }

  /** A model or tool call of a run, as a span of its own, timed from its event (it ended as written). */
  private childSpan(
    run: Running | undefined,
    name: string,
    event: ObservedEvent,
    durationMs: number,
    attributes: Record<string, string | number | string[]>,
    failed = false,
  ): void {
    const tracing = this.options.tracing;
    if (!run?.span || !tracing?.enabled) return;
    const end = timeOf(event);
    const span = tracing.tracer.startSpan(
      name,
      { kind: SpanKind.CLIENT, startTime: end - durationMs, attributes },
      trace.setSpan(context.active(), run.span),
    );
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(end);
  }
}

/** When an event happened: a held event keeps its own time; the others happen as they are written. */
function timeOf(event: ObservedEvent): number {
  return event.at ? Date.parse(event.at) : Date.now();
}
