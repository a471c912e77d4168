/**
 * The one interface the agent loop needs from a model. Adapters (the OpenAI-compatible client,
 * the scripted model for tests) implement it; the loop never sees a vendor SDK.
 */
import type { AssistantMessage, Message, TokenUsage } from '@agentq/protocol';

/** A tool as the model sees it: a name, what it is for, and a JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  messages: readonly Message[];
  /** Offered as native tool calls; empty or absent means the model just answers. */
  tools?: readonly ToolSpec[];
  /** Aborts the request (a cancelled task); the call then rejects with an `LlmError` of code `aborted`. */
  signal?: AbortSignal;
  /**
   * Given: the answer is asked for as a stream where the endpoint streams, and each piece is passed here
   * as it comes (the whole answer is still what `generate` resolves with, the same as without a stream).
   */
  onDelta?: (delta: ModelDelta) => void;
}

/**
 * A piece of an answer as it forms: text, reasoning, a tool call's name as it begins; `restart`: the
 * stream broke, and the answer is asked for again whole (what came before it is void).
 */
export interface ModelDelta {
  text?: string;
  reasoning?: string;
  toolCall?: string;
  restart?: true;
}

export interface ModelResponse {
  message: AssistantMessage;
  /** Reasoning the provider returned beside the answer (e.g. DeepSeek's `reasoning_content`). */
  reasoning?: string;
  usage?: TokenUsage;
  finishReason?: string;
  /** The model that answered, as the provider named it. */
  model: string;
  /** What the call cost in USD, when the model has a price. */
  costUsd?: number;
  /** What the provider said of its limits (x-ratelimit-* headers), when it did. */
  limits?: ProviderLimits;
}

/** A provider's limits as its answer stated them: what is left, and in how long each resets (ms). */
export interface ProviderLimits {
  remainingRequests?: number;
  remainingTokens?: number;
  resetRequestsMs?: number;
  resetTokensMs?: number;
}

export interface LanguageModel {
  /** A name for events and logs, e.g. `qwen2.5-coder:7b`. */
  readonly modelId: string;
  generate(request: ModelRequest): Promise<ModelResponse>;
}
