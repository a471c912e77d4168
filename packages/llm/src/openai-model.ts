/**
 * A `LanguageModel` over the official `openai` SDK, for any OpenAI-compatible endpoint
 * (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp server). Retries on 408/409/429/5xx and connection
 * errors are the SDK's own (exponential backoff with jitter, honouring Retry-After).
 */
import OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletion,
} from 'openai/resources/chat/completions';
import type { Message, ToolCall } from '@agentq/protocol';
import { LlmError, codeForStatus } from './errors.js';
import type { LanguageModel, ModelRequest, ModelResponse, ToolSpec } from './language-model.js';

export interface OpenAIModelOptions {
  /** The model name the endpoint serves, e.g. `gpt-4o-mini` or `qwen2.5-coder:7b`. */
  model: string;
  /** Default: OpenAI's API. */
  baseURL?: string;
  /** Local servers need none; the SDK insists on a string, so a placeholder is sent. */
  apiKey?: string;
  /** Per request, in milliseconds. Default 120000. */
  timeoutMs?: number;
  /** Retries on retryable errors. Default 3. */
  maxRetries?: number;
}

export function createOpenAIModel(options: OpenAIModelOptions): LanguageModel {
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey ?? 'not-needed',
    timeout: options.timeoutMs ?? 120_000,
    maxRetries: options.maxRetries ?? 3,
  });
  return {
    modelId: options.model,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      let completion: ChatCompletion;
      try {
        completion = await client.chat.completions.create(
          {
            model: options.model,
            messages: request.messages.map(toOpenAIMessage),
            ...(request.tools?.length ? { tools: request.tools.map(toOpenAITool) } : {}),
          },
          { signal: request.signal },
        );
      } catch (error) {
        throw toLlmError(error, request.signal);
      }
      return fromCompletion(completion);
    },
  };
}

function toOpenAIMessage(message: Message): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

function fromCompletion(completion: ChatCompletion): ModelResponse {
  const choice = completion.choices?.[0];
  if (!choice) {
    throw new LlmError({ code: 'bad_response', message: 'The model endpoint answered with no choices.' });
  }
  const toolCalls: ToolCall[] = [];
  for (const call of choice.message.tool_calls ?? []) {
    if (call.type === 'function') {
      toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments ?? '' });
    }
  }
  // DeepSeek and several local servers put the model's reasoning beside the content.
  const reasoning = (choice.message as { reasoning_content?: unknown }).reasoning_content;
  return {
    message: { role: 'assistant', content: choice.message.content ?? null, ...(toolCalls.length ? { toolCalls } : {}) },
    ...(typeof reasoning === 'string' && reasoning ? { reasoning } : {}),
    ...(completion.usage
      ? { usage: { promptTokens: completion.usage.prompt_tokens, completionTokens: completion.usage.completion_tokens } }
      : {}),
    ...(choice.finish_reason ? { finishReason: choice.finish_reason } : {}),
    model: completion.model,
  };
}

function toLlmError(error: unknown, signal: AbortSignal | undefined): LlmError {
  if (error instanceof LlmError) return error;
  if (error instanceof OpenAI.APIUserAbortError || signal?.aborted) {
    return new LlmError({ code: 'aborted', message: 'The LLM request was aborted.', cause: error });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new LlmError({ code: 'timeout', message: 'The LLM request timed out.', cause: error });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new LlmError({ code: 'connection', message: `Could not reach the LLM endpoint: ${error.message}`, cause: error });
  }
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const retryAfter = Number(error.headers?.get?.('retry-after'));
    return new LlmError({
      code: codeForStatus(error.status),
      status: error.status,
      message: `The LLM endpoint answered ${error.status}: ${error.message}`,
      ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
      cause: error,
    });
  }
  return new LlmError({ code: 'bad_response', message: `LLM call failed: ${String(error)}`, cause: error });
}
