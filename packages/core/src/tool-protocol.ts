/**
 * How a model asks for tools and how results go back to it. Two protocols share the same tools,
 * events and limits: native OpenAI tool calls, and code fences for small local models.
 */
import type { ToolProtocolName } from '@agentq/contract';
import type { ToolSpec } from '@agentq/llm';
import type { AssistantMessage, Message } from '@agentq/protocol';
import type { Tool, ToolInterrupt } from '@agentq/tools';

/** One tool call the loop will run, whichever protocol asked for it. */
export interface PlannedCall {
  id: string;
  name: string;
  /** The arguments as JSON text, as the model wrote them (native) or as built from a fence. */
  arguments: string;
  /** Fences: save the block's code here before running it. */
  savePath?: string;
  saveContent?: string;
  /** Fences: the block's own words, e.g. "block 2 (```python:main.py)". */
  label?: string;
  /** A mistake to give back to the model instead of running anything. */
  error?: string;
  /** Why this call is answered as not run, without running it (past the cap on calls in one answer). */
  notRun?: string;
}

export interface CallResult {
  call: PlannedCall;
  status: 'ok' | 'failed' | 'not_run';
  output: string;
  /** The call paused the run (a tool's interrupt): its answer is written when that is satisfied. */
  interrupt?: ToolInterrupt;
}

export type TurnPlan =
  | { kind: 'final'; answer: string }
  | { kind: 'tools'; calls: PlannedCall[] }
  /** Nothing runs; this text goes back to the model (e.g. a fence that was never closed). */
  | { kind: 'reply'; text: string };

export interface ToolProtocol {
  readonly name: ToolProtocolName;
  /** Tools offered as native tool calls (none for fences: the system prompt teaches the tags). */
  toolSpecs(tools: readonly Tool[]): ToolSpec[];
  /** What the model's message asks for. */
  plan(message: AssistantMessage, options: { step: number; tools: readonly Tool[] }): TurnPlan;
  /** Whether the first failure stops the remaining calls of the message. */
  readonly stopsAtFirstFailure: boolean;
  /** The message to commit as soon as one result is in (native: its `tool` message). */
  messageForResult(result: CallResult): Message | undefined;
  /** The messages to commit once the step's results are all in (fences: one feedback message). */
  messagesForStep(results: readonly CallResult[]): Message[];
  /** The message that carries a `reply` plan back to the model. */
  replyMessage(text: string): Message;
  /** The calls that have no result yet among the messages after their message (a resumed step). */
  pendingCalls(calls: readonly PlannedCall[], after: readonly Message[]): PlannedCall[];
}
