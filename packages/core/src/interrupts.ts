/**
 * How a run pauses: it ends with an interrupt of one kind, and its task waits until something outside
 * the run satisfies it (an answer, every held call decided, every child ended); then the task is queued
 * again and a run on any worker goes on from its journal. The kinds, and what each carries:
 */
import type { ToolInterrupt } from '@agentq/tools';

export type Interrupt =
  /** The model asked its user a question (`ask_user`, call `callId`). */
  | { kind: 'question'; callId: string; question: string }
  /** Calls of step `step` wait for a person's approval. */
  | { kind: 'approval'; step: number; calls: AwaitedCall[] }
  /** Call `callId` (`delegate`) started these child tasks; it is answered with their results. */
  | (ToolInterrupt & { callId: string });

export type InterruptKind = Interrupt['kind'];

/** A call that waits for a person, and the rule that says so. */
export interface AwaitedCall {
  id: string;
  name: string;
  arguments: string;
  rule: string;
}
