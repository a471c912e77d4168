/**
 * What a client may submit, what a task is, and what is stored and shown of it. Submissions are
 * validated with zod at the API; job payloads again when a worker picks them up.
 */
import { z } from 'zod';

export const AGENT_POOLS = ['coder', 'file', 'casual'] as const;
export type AgentPool = (typeof AGENT_POOLS)[number];
/** Where a task without an `agent` goes until the planner arrives. */
export const DEFAULT_POOL: AgentPool = 'coder';

export const TASK_STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export const MAX_TASKS_PER_SUBMIT = 10_000;

export const taskInputSchema = z.object({
  prompt: z.string().trim().min(1, 'must be a non-empty string').max(200_000),
  agent: z.enum(AGENT_POOLS).optional(),
  /** 1 (lowest) to 10 (highest); default 5. */
  priority: z.number().int().min(1).max(10).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type TaskInput = z.infer<typeof taskInputSchema>;

export const submitSchema = z.object({
  tasks: z.array(taskInputSchema).min(1, 'must hold at least one task').max(MAX_TASKS_PER_SUBMIT, `at most ${MAX_TASKS_PER_SUBMIT} tasks per request`),
});

/** The payload of every agent job: the task record holds the rest. */
export const agentJobSchema = z.object({ taskId: z.string().min(1) });
export type AgentJob = z.infer<typeof agentJobSchema>;

/** An error as stored and shown: plain data. */
export interface TaskError {
  code: 'max_steps' | 'budget' | 'error' | 'enqueue_failed';
  message: string;
}

export interface TaskView {
  id: string;
  status: TaskStatus;
  agent: string;
  prompt: string;
  priority: number;
  metadata: Record<string, unknown>;
  result: string | null;
  error: TaskError | null;
  /** While `waiting`: what the model asked the user. */
  question: string | null;
  steps: number;
  usage: { promptTokens: number; completionTokens: number };
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export const answerSchema = z.object({ text: z.string().trim().min(1, 'must be a non-empty string').max(100_000) });

/** What a waiting task waits for: the call that asked, and how the answer must be written back. */
export interface PendingQuestion {
  callId: string;
  protocol: 'native' | 'fences';
  question: string;
}
