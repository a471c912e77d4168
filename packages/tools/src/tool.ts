/**
 * What a tool is: a name the model calls, a description, a zod schema of its arguments (sent to
 * the model as JSON schema, and used to validate what it sends back), and a `run` that does the work
 * inside the task's work directory.
 */
import type { z } from 'zod';
import type { WorkdirDisk } from './disk-quota.js';
import type { HostIdentity } from './jail-identity.js';
import type { ProcessIsolation } from './process-isolation.js';

/** Notes the subtasks of one task share (a Redis hash in production). */
export interface Scratchpad {
  /** Saves the note; false when it is a new key and the memory already holds MAX_NOTES notes. */
  set(key: string, value: string): Promise<boolean>;
  get(key: string): Promise<string | undefined>;
  /** Every key with the start of its value. */
  list(): Promise<Array<{ key: string; value: string }>>;
}

export interface ToolContext {
  /** The call being run, and its step: what a tool that must act once per call keys its work by. */
  call?: { id: string; step: number };
  /** The task's own work directory; every path and process stays inside it. */
  workdir: string;
  /** Cancels the run: the tool's process tree is killed. */
  signal: AbortSignal;
  /** Wall-clock limit of one run. */
  timeoutMs: number;
  /** Characters of output kept (head and tail, with a marker between). */
  outputLimit: number;
  /** The shared memory of the task this run belongs to, when it has one. */
  scratchpad?: Scratchpad;
  /** Let `http_fetch` reach loopback and private-network addresses. Default false. */
  allowPrivateNetwork?: boolean;
  /** The services agentq uses (Redis) at addresses that are not private: `http_fetch` refuses them too. */
  serviceAddresses?: readonly string[];
  /** How bash, python and node run: jailed, unjailed (the operator opted out), or refused. */
  isolation: ProcessIsolation;
  /**
   * Whether a redirect `http_fetch` would follow to `url` needs a person's approval, as a call of its own
   * to that URL would (the agent's approval rules): the rule in words, or undefined. Default: none does.
   */
  redirectNeedsApproval?: (url: string) => string | undefined;
  /** Makes the work directory if it is not there yet; called before each tool runs. Default: it is there. */
  prepareWorkdir?: () => Promise<void>;
  /** The work directory's disk quota, when it has one: process tools are watched, file tools check before they write. */
  disk?: WorkdirDisk;
}

export interface ToolResult {
  /** Success is the exit status and the tool's own result, never a keyword search of the output. */
  ok: boolean;
  /** What the model reads: the output, or an error written as an instruction it can act on. */
  output: string;
  /**
   * The run pauses here instead (core's interrupts.ts): the call is answered once what it started ends.
   * `children`: the child tasks a `delegate` call started.
   */
  interrupt?: ToolInterrupt;
}

/** What a tool's run may pause on. */
export type ToolInterrupt = { kind: 'children'; children: string[] };

/** A code fence the model may write instead of a JSON tool call (the fences protocol). */
export interface FenceBlockInput {
  code: string;
  /** From `tag:path` on the fence line. */
  savePath?: string;
}

export interface FenceBinding {
  /** Tags this tool claims, lower case: the first is the one the prompt teaches, the rest are aliases. */
  tags: readonly string[];
  /** The tool's arguments for a block; a string is an error to give back to the model instead. */
  toArguments(block: FenceBlockInput): Record<string, unknown> | string;
}

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: Schema;
  /** The JSON schema the model sees, when it is given rather than made from `schema` (an MCP server's). */
  parameters?: Record<string, unknown>;
  /**
   * Arguments that name a path of the work directory, opened through workdir-files.ts: an approval rule
   * reads them as that resolves them (workdirPathOf), not as the model spelt them. Default none.
   */
  pathArguments?: readonly string[];
  /** How the tool is called with a code fence; tools without it exist only as native tool calls. */
  fence?: FenceBinding;
  run(args: z.infer<Schema>, context: ToolContext): Promise<ToolResult>;
}

/** Helps TypeScript infer `args` from the schema. */
export function defineTool<Schema extends z.ZodType>(tool: Tool<Schema>): Tool {
  return tool as unknown as Tool;
}

/** Who files the file tools create must belong to, so that the jailed tools (which run as it) can change them. */
export function fileOwner(context: ToolContext): HostIdentity | undefined {
  return context.isolation.kind === 'jail' ? context.isolation.jail.identity(context.workdir) : undefined;
}
