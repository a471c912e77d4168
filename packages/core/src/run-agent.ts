/**
 * The agent loop: model call -> tool calls -> results -> model call ... until the model answers
 * without asking for a tool, a stop condition ends it, it asks the user something, or it is
 * cancelled. It starts from whatever its journal holds, so a job picked up again after a crash
 * resumes at its last committed step.
 *
 *   load memory ─► finish a half-done step ─► [cancelled? stop? compact?] ─► model turn ─► final? ─► completed
 *                                                     ▲                                    │ tools
 *                                                     └──── results committed ◄── run tools ◄┘ (an interrupt ─► waiting)
 */
import type { LanguageModel, ModelDelta } from '@agentq/llm';
import {
  buildContextView,
  type AssistantMessage,
  type MemoryEntry,
  type Message,
  type TokenUsage,
} from '@agentq/protocol';
import type { Tool, ToolContext, ToolSettings } from '@agentq/tools';
import type { ApprovalDecision, ApprovalRule } from '@agentq/contract';
import { modelErrorOutcome, type AgentOutcome } from './agent-outcome.js';
import { takeModelTurn } from './call-model.js';
import { compactContext, type CompactionSettings } from './compact-context.js';
import { countMessageTokens } from './count-tokens.js';
import { capToolCalls, DEFAULT_MAX_TOOL_CALLS_PER_STEP } from './cap-tool-calls.js';
import { executeTools, type ExecuteToolsOutcome } from './execute-tools.js';
import type { AgentJournal } from './journal.js';
import { nativeProtocol } from './native-protocol.js';
import { stepCountIs, type StopCondition } from './stop-conditions.js';
import type { ToolProtocol } from './tool-protocol.js';

export interface RunAgentOptions {
  model: LanguageModel;
  tools: readonly Tool[];
  journal: AgentJournal;
  /** Used only when the journal is empty (a fresh task). */
  systemPrompt: string;
  prompt: string;
  /** What a fresh task's journal starts with instead of the system prompt and the prompt (a fork's kept steps). */
  startFrom?: () => Promise<MemoryEntry[]>;
  /**
   * The run's tools, ready (tool-settings.ts in the tools package): their work directory, jail, disk
   * quota, network rules and shared memory, as the worker made them. The loop adds its signal.
   */
  toolContext: ToolSettings;
  /** Hard cap on model calls. */
  maxSteps: number;
  /** Tool calls one model answer may run; the rest are answered "not run". Default 32. */
  maxToolCallsPerStep?: number;
  /** How the model asks for tools. Default native tool calls. */
  protocol?: ToolProtocol;
  /** More stop conditions (budgets), checked with the step cap before every model call. Default none. */
  stopWhen?: StopCondition[];
  /** Tokens the task used before this run (earlier attempts). Default none. */
  usage?: TokenUsage;
  /** When the task first started (ms since the epoch), for time budgets. Default now. */
  startedAt?: number;
  /** Summarise older steps when the context grows past a limit. Default: never. */
  compaction?: CompactionSettings;
  /** Cancels the run: aborts the model request and kills the running tool. */
  signal: AbortSignal;
  /**
   * Calls a person must approve before they run (the agent's `approvals`), what was decided of one
   * step's calls, and which of the approved ones began in an earlier run (`started`, the journal's
   * `startedCalls` of that step): the task's record keeps them while the step lasts.
   */
  approvals?: {
    rules: readonly ApprovalRule[];
    decided?: { step: number; calls: ReadonlyMap<string, ApprovalDecision>; started?: readonly string[] };
  };
  /** Each piece of a model's answer as it forms (the model is then asked for a stream), with its step. */
  onDelta?: (delta: ModelDelta, step: number) => void;
}

export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const { journal, signal, tools } = options;
  const protocol = options.protocol ?? nativeProtocol;
  const entries: MemoryEntry[] = await journal.load();
  if (entries.length === 0) {
    const initial: MemoryEntry[] = options.startFrom
      ? await options.startFrom()
      : [
          { role: 'system', content: options.systemPrompt },
          { role: 'user', content: options.prompt },
        ];
    // Made again from the task if lost: they go out with the first model request's event.
    await journal.commit({ messages: initial, lazy: true });
    entries.push(...initial);
  }
  const stopConditions = [stepCountIs(options.maxSteps), ...(options.stopWhen ?? [])];
  const callLimit = options.maxToolCallsPerStep ?? DEFAULT_MAX_TOOL_CALLS_PER_STEP;
  const toolSpecs = protocol.toolSpecs(tools);
  const countsNextPrompt = stopConditions.some((condition) => condition.countsNextPrompt);
  // The tools' schemas go with every call; counted once, roughly (their JSON), for a token budget.
  const toolSpecTokens = countsNextPrompt ? Math.ceil(JSON.stringify(toolSpecs).length / 4) : 0;
  const toolContext: ToolContext = { ...options.toolContext, signal };
  const usage: TokenUsage = { ...(options.usage ?? { promptTokens: 0, completionTokens: 0 }) };
  const startedAt = options.startedAt ?? Date.now();
  let steps = entries.filter((entry) => entry.role === 'assistant').length;
  // The provider's count of the context at the last call, and how much memory held then.
  let reported = { tokens: 0, entries: entries.length };

  const runTools = async (
    calls: Parameters<typeof executeTools>[0]['calls'],
    answerHeld = false,
  ): Promise<ExecuteToolsOutcome> => {
    const approvals = options.approvals && {
      rules: options.approvals.rules,
      ...(options.approvals.decided?.step === steps
        ? { decisions: options.approvals.decided.calls, started: options.approvals.decided.started ?? [] }
        : {}),
    };
    const outcome = await executeTools({
      calls,
      protocol,
      tools,
      journal,
      context: toolContext,
      step: steps,
      answerHeld,
      ...(approvals ? { approvals } : {}),
    });
    entries.push(...outcome.messages);
    return outcome;
  };
  const settle = (outcome: ExecuteToolsOutcome): AgentOutcome | undefined => {
    if (outcome.status === 'cancelled') return { status: 'cancelled', steps };
    if (outcome.status === 'interrupted') return { status: 'interrupted', interrupt: outcome.interrupt, steps };
    return undefined;
  };

  // Resuming: finish the last step if its tools did not all run; a last final answer ends the task.
  const lastIndex = entries.findLastIndex((entry) => entry.role === 'assistant');
  if (lastIndex !== -1) {
    const last = entries[lastIndex] as AssistantMessage;
    const after = entries.slice(lastIndex + 1).filter((entry): entry is Message => entry.role !== 'compaction');
    const plan = protocol.plan(last, { step: steps, tools });
    if (plan.kind === 'final' && after.length === 0) return { status: 'completed', answer: plan.answer, steps };
    if (plan.kind === 'tools') {
      const pending = protocol.pendingCalls(capToolCalls(plan.calls, callLimit), after);
      if (pending.length) {
        const stopped = settle(await runTools(pending));
        if (stopped) return stopped;
      }
    }
  }

  for (;;) {
    if (signal.aborted) return { status: 'cancelled', steps };
    // The next prompt, counted only for a condition that reads it (a token budget): the context and the tools' schemas.
    const nextPromptTokens = countsNextPrompt
      ? (await countMessageTokens(buildContextView(entries).map((item) => item.message))) + toolSpecTokens
      : undefined;
    const stop = stopConditions
      .map((condition) =>
        condition({
          steps,
          usage,
          elapsedMs: Date.now() - startedAt,
          ...(nextPromptTokens !== undefined ? { nextPromptTokens } : {}),
        }),
      )
      .find(Boolean);
    if (stop) return { status: 'failed', reason: stop.reason, message: stop.message, steps };

    try {
      if (options.compaction) {
        const sinceReport = entries
          .slice(reported.entries)
          .filter((entry): entry is Message => entry.role !== 'compaction');
        const compactions = await compactContext({
          settings: options.compaction,
          model: options.model,
          entries,
          ...(reported.tokens ? { reported: { tokens: reported.tokens, since: sinceReport } } : {}),
          journal,
          step: steps + 1,
          signal,
        });
        if (compactions.length) {
          entries.push(...compactions);
          reported = { tokens: 0, entries: entries.length };
        }
      }
      const turn = await takeModelTurn({
        model: options.model,
        context: buildContextView(entries).map((item) => item.message),
        protocol,
        tools,
        toolSpecs,
        journal,
        step: steps + 1,
        signal,
        holdFinalAnswer: true,
        holdToolsAnswer: true,
        ...(options.onDelta ? { onDelta: options.onDelta } : {}),
      });
      steps++;
      entries.push(...turn.committed);
      if (turn.usage) {
        usage.promptTokens += turn.usage.promptTokens;
        usage.completionTokens += turn.usage.completionTokens;
        reported = { tokens: turn.usage.promptTokens + turn.usage.completionTokens, entries: entries.length };
      }
      if (turn.plan.kind === 'final') return { status: 'completed', answer: turn.plan.answer, steps };
      if (turn.plan.kind === 'tools') {
        const stopped = settle(await runTools(capToolCalls(turn.plan.calls, callLimit), true));
        if (stopped) return stopped;
      }
    } catch (error) {
      return { ...modelErrorOutcome(error, signal), steps };
    }
  }
}
