/**
 * The planning stage, beside the agent loop: the planner model is asked for a plan until one passes
 * the checks (`plan.ts`), a bounded number of times, each rejected plan going back to it with the
 * exact problems ("subtask 3 needs 7, which does not exist"). The exchange is the task's journal, so a
 * resumed run does not ask again for what it already has. A re-plan is the same exchange, continued
 * with what went wrong.
 */
import type { LanguageModel, ToolSpec } from '@agentq/llm';
import { buildContextView, type MemoryEntry, type Message } from '@agentq/protocol';
import { modelErrorOutcome } from './agent-outcome.js';
import { takeModelTurn } from './call-model.js';
import type { AgentJournal } from './journal.js';
import { nativeProtocol } from './native-protocol.js';
import { checkPlan, extractPlanJson, type PlanCheck, type PlannedSubtask } from './plan.js';

export type PlanOutcome =
  | { status: 'planned'; plan: PlannedSubtask[] }
  | { status: 'failed'; reason: 'invalid_plan'; message: string; errors: string[] }
  | { status: 'failed'; reason: 'error'; message: string }
  | { status: 'cancelled' };

export interface PlanTaskOptions {
  model: LanguageModel;
  journal: AgentJournal;
  /** Used only when the journal is empty (a fresh task). */
  systemPrompt: string;
  prompt: string;
  /** Plans the model may answer in all, first attempts and those of a resumed run together. */
  attempts: number;
  maxSubtasks: number;
  /** The agent kinds a subtask may name. */
  agents: readonly string[];
  /** Offer `submit_plan` as a native tool too. Default false. */
  offerTool?: boolean;
  signal: AbortSignal;
}

/** Asks for the first plan of a task. */
export async function planTask(options: PlanTaskOptions): Promise<PlanOutcome> {
  const entries = await options.journal.load();
  if (entries.length === 0) {
    const initial: Message[] = [
      { role: 'system', content: options.systemPrompt },
      { role: 'user', content: options.prompt },
    ];
    await options.journal.commit({ messages: initial });
    entries.push(...initial);
  }
  const tried = entries.filter((entry) => entry.role === 'assistant').length;
  return askForPlan({ ...options, entries, left: Math.max(0, options.attempts - tried) });
}

/** Asks for a new plan around what did not complete (`feedback` says what), in the same exchange. */
export async function replanTask(
  options: Omit<PlanTaskOptions, 'systemPrompt' | 'prompt'> & { feedback: string },
): Promise<PlanOutcome> {
  const entries = await options.journal.load();
  const ask: Message = { role: 'user', content: options.feedback, _feedback: true };
  await options.journal.commit({ messages: [ask] });
  entries.push(ask);
  return askForPlan({ ...options, entries, left: options.attempts });
}

/** Offered as a native tool too, for models that prefer calling one. */
function submitPlanTool(agents: readonly string[]): ToolSpec {
  return {
    name: 'submit_plan',
    description: 'Submit the plan: the subtasks, each with an id, an agent, a task and the ids it needs.',
    parameters: {
      type: 'object',
      properties: {
        plan: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              agent: { type: 'string', enum: [...agents] },
              task: { type: 'string' },
              need: { type: 'array', items: { type: 'string' } },
            },
            required: ['id', 'agent', 'task', 'need'],
          },
        },
      },
      required: ['plan'],
    },
  };
}

async function askForPlan(
  options: Omit<PlanTaskOptions, 'systemPrompt' | 'prompt'> & { entries: MemoryEntry[]; left: number },
): Promise<PlanOutcome> {
  const { entries, signal } = options;
  let errors: string[] = [];
  try {
    for (let attempt = 1; attempt <= options.left; attempt++) {
      if (signal.aborted) return { status: 'cancelled' };
      // Set by the turn's completion, which sees the answer first.
      const verdict: { check: PlanCheck } = { check: { ok: false, errors: [] } };
      const turn = await takeModelTurn({
        model: options.model,
        context: buildContextView(entries).map((item) => item.message),
        protocol: nativeProtocol,
        tools: [],
        toolSpecs: options.offerTool ? [submitPlanTool(options.agents)] : [],
        journal: options.journal,
        step: entries.filter((entry) => entry.role === 'assistant').length + 1,
        signal,
        // The plan is checked before the step completes: the verdict is committed with the answer.
        completeWith: (_plan, answer) => {
          const call = answer.toolCalls?.[0];
          const json = extractPlanJson({ content: answer.content, ...(call ? { toolArguments: call.arguments } : {}) });
          const found: PlanCheck =
            json.json === undefined
              ? { ok: false, errors: [json.error!] }
              : checkPlan(json.json, { agents: options.agents, maxSubtasks: options.maxSubtasks });
          verdict.check = found;
          const reply = found.ok
            ? 'Plan accepted.'
            : `The plan was not accepted:\n${found.errors.map((error) => `- ${error}`).join('\n')}\nSend the whole corrected plan.`;
          // A tool call gets its result; a plain answer gets the reply as feedback.
          const messages: Message[] = (answer.toolCalls ?? []).map((toolCall) => ({
            role: 'tool',
            toolCallId: toolCall.id,
            name: toolCall.name,
            content: reply,
          }));
          if (!messages.length && !found.ok) messages.push({ role: 'user', content: reply, _feedback: true });
          return { messages, completesStep: true, ...(found.ok ? {} : { stepData: { planErrors: found.errors } }) };
        },
      });
      entries.push(...turn.committed);
      const { check } = verdict;
      if (check.ok) return { status: 'planned', plan: check.plan };
      errors = check.errors;
    }
  } catch (error) {
    return modelErrorOutcome(error, signal);
  }
  return {
    status: 'failed',
    reason: 'invalid_plan',
    message: `The planner gave no valid plan in ${options.attempts} attempts: ${errors.join('; ') || 'no attempt left'}`,
    errors,
  };
}
