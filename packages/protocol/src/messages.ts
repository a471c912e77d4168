/**
 * The conversation as agentq stores it in memory. Close to the OpenAI chat format, but with
 * camelCase fields and room for internal fields (prefixed `_`) that never reach a provider.
 */

export interface ToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model wrote; it may not parse, and the loop tells the model so. */
  arguments: string;
}

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
  /** Internal: tool feedback of the fences protocol, not something the user said. */
  _feedback?: boolean;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  toolCalls?: ToolCall[];
}

export interface ToolMessage {
  role: 'tool';
  toolCallId: string;
  name: string;
  content: string;
  /** Internal: the tool failed. Dropped before the message is sent to a model. */
  _isError?: boolean;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those the provider served from its cache (priced lower), when it says. */
  cachedPromptTokens?: number;
}

/**
 * A compaction, as stored in memory: the entries at stored positions [from, to) are shown to the model
 * as this summary from now on. Memory stays append-only; what was summarised is still there.
 */
export interface CompactionEntry {
  role: 'compaction';
  summary: string;
  from: number;
  to: number;
}

/** What a task's memory holds: messages, and the compactions that shorten them for the model. */
export type MemoryEntry = Message | CompactionEntry;
