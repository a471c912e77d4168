/**
 * Asks the planner model for a plan until one passes the checks, a bounded number of times. A plan
 * that fails goes back to the model with the exact problems ("subtask 3 needs 7, which does not
 * exist"). The exchange is the root task's memory, so a resumed job does not ask again for what it
 * already has.
 */
import { AGENT_KINDS } from '@agentq/contract';
import { nativeProtocol, takeModelTurn, type AgentJournal } from '@agentq/core';
import type { LanguageModel, ToolSpec } from '@agentq/llm';
import { buildContextView, type MemoryEntry, type Message } from '@agentq/protocol';
import { checkPlan, extractPlanJson, type PlannedSubtask } from '@agentq/queue';

/** Offered as a native tool too, for models that prefer calling one. */
export const SUBMIT_PLAN_TOOL: ToolSpec = {
  name: 'submit_plan',
  description: 'Submit the plan: the subtasks, each with an id, an agent, a task and the ids it needs.',
  parameters: {
    type: 'object',
    properties: {
      plan: {
        type: 'array',
        items: {
          type: 'object',
          properties: { id: { type: 'string' }, agent: { type: 'string', enum: [...AGENT_KINDS] }, task: { type: 'string' }, need: { type: 'array', items: { type: 'string' } } },
          required: ['id', 'agent', 'task', 'need'],
        },
      },
    },
    required: ['plan'],
  },
};

export type PlanAnswer = { ok: true; plan: PlannedSubtask[] } | { ok: false; errors: string[] };

export async function askForPlan(options: {
  model: LanguageModel;
  journal: AgentJournal;
  entries: MemoryEntry[];
  /** Tries in this round. */
  attempts: number;
  maxSubtasks: number;
  offerTool: boolean;
  signal: AbortSignal;
}): Promise<PlanAnswer> {
  const { journal, entries } = options;
  let errors: string[] = [];
  for (let attempt = 1; attempt <= options.attempts; attempt++) {
    if (options.signal.aborted) return { ok: false, errors: ['cancelled'] };
    const step = entries.filter((entry) => entry.role === 'assistant').length + 1;
    const turn = await takeModelTurn({
      model: options.model,
      context: buildContextView(entries).map((item) => item.message),
      protocol: nativeProtocol,
      tools: [],
      toolSpecs: options.offerTool ? [SUBMIT_PLAN_TOOL] : [],
      journal,
      step,
      signal: options.signal,
      completeFinalStep: false,
    });
    entries.push(...turn.committed);
    const answer = turn.committed[0]!;
    const call = answer.role === 'assistant' ? answer.toolCalls?.[0] : undefined;
    const found = extractPlanJson({ content: answer.content, ...(call ? { toolArguments: call.arguments } : {}) });
    const check = found.json === undefined ? { ok: false as const, errors: [found.error!] } : checkPlan(found.json, { agents: AGENT_KINDS, maxSubtasks: options.maxSubtasks });
    errors = check.ok ? [] : check.errors;
    const reply = check.ok ? 'Plan accepted.' : `The plan was not accepted:\n${errors.map((error) => `- ${error}`).join('\n')}\nSend the whole corrected plan.`;
    // A tool call gets its result; a plain answer gets the reply as feedback.
    const feedback: Message[] = (answer.role === 'assistant' ? answer.toolCalls ?? [] : []).map((toolCall) => ({ role: 'tool', toolCallId: toolCall.id, name: toolCall.name, content: reply }));
    if (!feedback.length && !check.ok) feedback.push({ role: 'user', content: reply, _feedback: true });
    await journal.commit({
      messages: feedback,
      events: [{ type: 'step.completed', step, data: { step, ...(check.ok ? {} : { planErrors: errors }) } }],
      steps: step,
    });
    entries.push(...feedback);
    if (check.ok) return check;
  }
  return { ok: false, errors };
}
