/**
 * A plan, as the planner model writes it (AgenticSeek's shape):
 * `{ "plan": [ { "id": "1", "agent": "coder", "task": "...", "need": [] } ] }`.
 * It is checked as a schema and as a graph (known agents, unique ids, needs that exist, no cycles,
 * a bounded size); every problem is reported in words the model can act on.
 */
import { parseFences } from '@agentq/protocol';
import { z } from 'zod';

export interface PlannedSubtask {
  id: string;
  agent: string;
  task: string;
  need: string[];
}

const subtaskSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String).pipe(z.string().trim().min(1, 'must not be empty')),
  agent: z.string().trim().min(1),
  task: z.string().trim().min(1, 'must describe the work'),
  need: z.array(z.union([z.string(), z.number()]).transform(String)).default([]),
});
const planSchema = z.object({ plan: z.array(subtaskSchema).min(1, 'must hold at least one subtask') });

export type PlanCheck = { ok: true; plan: PlannedSubtask[] } | { ok: false; errors: string[] };

/**
 * Finds the plan in a model's answer: a `submit_plan` tool call's arguments, a ```json fence, or the
 * whole answer as JSON.
 */
export function extractPlanJson(answer: { content: string | null; toolArguments?: string }): {
  json?: unknown;
  error?: string;
} {
  const candidates: string[] = [];
  if (answer.toolArguments) candidates.push(answer.toolArguments);
  const content = answer.content ?? '';
  const fenced = parseFences(content, new Map([['json', 'json']])).blocks.map((block) => block.code);
  candidates.push(...fenced.reverse());
  if (!fenced.length) {
    const start = content.indexOf('{');
    const end = content.lastIndexOf('}');
    if (start !== -1 && end > start) candidates.push(content.slice(start, end + 1));
  }
  let lastError = 'The answer holds no plan. Answer with the plan as JSON in a ```json block.';
  for (const candidate of candidates) {
    try {
      return { json: JSON.parse(candidate) };
    } catch (error) {
      lastError = `The plan is not valid JSON (${(error as Error).message}). Send it again as one JSON object in a \`\`\`json block.`;
    }
  }
  return { error: lastError };
}

/** `agents`: the agents a subtask may name; without it, any (the caller checks them against its own). */
export function checkPlan(json: unknown, options: { agents?: readonly string[]; maxSubtasks: number }): PlanCheck {
  const parsed = planSchema.safeParse(json);
  if (!parsed.success)
    return { ok: false, errors: parsed.error.issues.map((issue) => `${describePath(issue.path)}: ${issue.message}`) };
  const plan = parsed.data.plan;
  const errors: string[] = [];
  if (plan.length > options.maxSubtasks)
    errors.push(`the plan has ${plan.length} subtasks; at most ${options.maxSubtasks} are allowed: merge some`);
  const ids = new Set<string>();
  for (const subtask of plan) {
    if (ids.has(subtask.id)) errors.push(`subtask id ${subtask.id} is used twice: give every subtask its own id`);
    ids.add(subtask.id);
  }
  for (const subtask of plan) {
    if (options.agents && !options.agents.includes(subtask.agent)) {
      errors.push(
        `subtask ${subtask.id} uses agent "${subtask.agent}", which does not exist: use one of ${options.agents.join(', ')}`,
      );
    }
    for (const need of subtask.need) {
      if (need === subtask.id) errors.push(`subtask ${subtask.id} needs itself`);
      else if (!ids.has(need)) errors.push(`subtask ${subtask.id} needs ${need}, which does not exist`);
    }
  }
  if (errors.length === 0) {
    const cycle = findCycle(plan);
    if (cycle)
      errors.push(
        `subtasks ${cycle.join(' -> ')} need each other in a cycle: a subtask can only need subtasks that can finish before it`,
      );
  }
  return errors.length ? { ok: false, errors } : { ok: true, plan };
}

function describePath(path: ReadonlyArray<PropertyKey>): string {
  const [top, index, field] = path;
  if (top === 'plan' && typeof index === 'number')
    return `subtask #${index + 1}${field !== undefined ? ` field "${String(field)}"` : ''}`;
  return path.length ? path.map(String).join('.') : 'the answer';
}

/** A cycle of needs as a path of ids (first id repeated at the end), or undefined. */
function findCycle(plan: readonly PlannedSubtask[]): string[] | undefined {
  const needs = new Map(plan.map((subtask) => [subtask.id, subtask.need]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const need of needs.get(id) ?? []) {
      const cycle = visit(need);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const subtask of plan) {
    const cycle = visit(subtask.id);
    if (cycle) return cycle.reverse();
  }
  return undefined;
}

/** Every subtask that needs `id`, directly or through others. */
export function dependentsOf(plan: readonly PlannedSubtask[], id: string): string[] {
  const found = new Set<string>();
  const queue = [id];
  while (queue.length) {
    const current = queue.shift()!;
    for (const subtask of plan) {
      if (subtask.need.includes(current) && !found.has(subtask.id)) {
        found.add(subtask.id);
        queue.push(subtask.id);
      }
    }
  }
  return [...found];
}
