/**
 * A `LanguageModel` over the official `openai` SDK, for any OpenAI-compatible endpoint
 * (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp server). Retries on 408/409/429/5xx, timeouts and
 * connection errors are the SDK's own (exponential backoff with jitter, honouring Retry-After); a 2xx
 * whose body is broken (cut off, not JSON, no choices) is retried here the same way, since the SDK
 * does not. One deadline bounds the whole call, retries included, so a hung endpoint holds a task for
 * a known time at most. Errors name the endpoint and the model, never the key.
 */
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { Message, TokenUsage, ToolCall } from '@agentq/protocol';
import { LlmError, codeForStatus } from './errors.js';
import { providerLimitsOf, providerWaitMs } from './provider-limits.js';
import { completionChunks } from './completion-chunks.js';
import { keepAliveFetch } from './keep-alive-fetch.js';
import { sdkRetryFetch } from './sdk-retry-fetch.js';
import { loopTurn } from './loop-turn.js';
import type { LanguageModel, ModelDelta, ModelRequest, ModelResponse, ToolSpec } from './language-model.js';
import { costOf, DEFAULT_PRICES, priceOf, type ModelPrice, type PriceTable } from './prices.js';

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
  /** The whole call, every attempt included, in milliseconds. Default 300000. */
  deadlineMs?: number;
  /** What calls cost (USD per million tokens), by model. Default: DEFAULT_PRICES. */
  prices?: PriceTable;
  /** Sent as `max_tokens`. Default: not sent (the endpoint's own limit). */
  maxOutputTokens?: number;
}

export function createOpenAIModel(options: OpenAIModelOptions): LanguageModel {
  const maxRetries = options.maxRetries ?? 3;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const deadlineMs = options.deadlineMs ?? 300_000;
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey ?? 'not-needed',
    timeout: timeoutMs,
    maxRetries,
    fetch: sdkRetryFetch(keepAliveFetch),
  });
  const endpoint = `${endpointOf(client.baseURL)} (model ${options.model})`;
  // Priced as the operator named the model, else as the provider named it (looked up once per name); unknown: 0.
  const prices = options.prices ?? DEFAULT_PRICES;
  const configured = priceOf(options.model, prices);
  const answered = new Map<string, ModelPrice | undefined>();
  const priced = (response: ModelResponse): ModelResponse => {
    if (!configured && !answered.has(response.model)) answered.set(response.model, priceOf(response.model, prices));
    const price = configured ?? answered.get(response.model);
    return response.usage && price ? { ...response, costUsd: costOf(response.usage, price) } : response;
  };
  /**
   * The answer as a stream, each piece passed to `onDelta` as it comes, gathered into the same answer a
   * whole call gives. A refusal or a failure before the stream starts is the call's, retried as a whole
   * call's is (the SDK's retries, Retry-After); an answer sent whole is read as a whole call's. Undefined
   * when the endpoint broke the stream: the caller then asks for the answer whole (after telling
   * `onDelta` to start over).
   */
  /** Whether the endpoint streams: until it answers a stream request whole, it is asked for streams. */
  let streams = true;
  const streamed = async (
    request: ModelRequest & { onDelta: NonNullable<ModelRequest['onDelta']> },
    signal: AbortSignal,
  ): Promise<ModelResponse | undefined> => {
    // The SDK sends it (its retries, Retry-After, errors); the answer's chunks are read here (completion-chunks.ts).
    const response = await client.chat.completions
      .create({ ...requestBody(request), stream: true, stream_options: { include_usage: true } }, { signal })
      .asResponse();
    // An endpoint that answers a stream request whole (JSON) does not stream: that answer is read as a
    // whole call's is, with its bounds (past 64 MiB, cut off, not JSON: a broken answer), in this request.
    if (!response.headers.get('content-type')?.includes('text/event-stream')) {
      // It does not stream: it is asked for whole answers from now on (a stream costs a worker more).
      streams = false;
      const completion = (await response.json()) as ChatCompletion;
      const whole = providerLimitsOf(response.headers);
      return priced({ ...fromCompletion(completion, endpoint, options.model), ...(whole ? { limits: whole } : {}) });
    }
    const limits = providerLimitsOf(response.headers);
    let passed = false;
    const answer = gatheredAnswer();
    try {
      for await (const chunk of completionChunks(response))
        answer.add(chunk, (delta) => {
          passed = true;
          request.onDelta(delta);
        });
      // A stream cut before its end (no finish reason came) is broken.
      if (!answer.finished()) throw new Error('the stream ended before the answer did');
    } catch (error) {
      if (request.signal?.aborted || signal.aborted) throw error;
      if (passed) request.onDelta({ restart: true });
      return undefined;
    }
    return priced({
      ...fromCompletion(answer.completion(), endpoint, options.model),
      ...(limits ? { limits } : {}),
    });
  };
  /** What a call asks of the endpoint, streamed or not. */
  const requestBody = (request: ModelRequest) => ({
    model: options.model,
    messages: request.messages.map(toOpenAIMessage),
    ...(request.tools?.length ? { tools: request.tools.map(toOpenAITool) } : {}),
    ...(options.maxOutputTokens ? { max_tokens: options.maxOutputTokens } : {}),
  });
  /** A call's failure as the caller sees it: past the deadline, said so; else what the endpoint did. */
  const failed = (error: unknown, request: ModelRequest, deadline: { passed: boolean }): LlmError =>
    deadline.passed && !request.signal?.aborted
      ? new LlmError({
          code: 'deadline_exceeded',
          message: `The model endpoint ${endpoint} gave no usable answer within ${Math.round(deadlineMs / 1000)} s (AGENTQ_LLM_DEADLINE_MS; each attempt may take ${Math.round(timeoutMs / 1000)} s).`,
          cause: error,
        })
      : toLlmError(error, request.signal, endpoint);
  /** Every attempt of one call, until an answer, an error not worth retrying, or the deadline. */
  const call = async (
    request: ModelRequest,
    signal: AbortSignal,
    deadline: { passed: boolean },
  ): Promise<ModelResponse> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const { data: completion, response } = await client.chat.completions
          .create(requestBody(request), { signal })
          .withResponse();
        const limits = providerLimitsOf(response.headers);
        return priced({
          ...fromCompletion(completion as ChatCompletion, endpoint, options.model),
          ...(limits ? { limits } : {}),
        });
      } catch (error) {
        const failure = failed(error, request, deadline);
        if (failure.code === 'deadline_exceeded') throw failure;
        // The SDK retried what it knows; a broken 2xx body it does not, so it is retried here alike.
        if (failure.code !== 'bad_response' || attempt >= maxRetries) throw failure;
        // An aborted wait ends here; the next call sees the signal and stops.
        await sleep(backoffMs(attempt), signal).catch(() => undefined);
      }
    }
  };
  return {
    modelId: options.model,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      // Building a request costs more CPU than anything else of a step: each waits for its turn.
      await loopTurn();
      // One controller, aborted by the caller's signal or the deadline: AbortSignal.any and
      // AbortSignal.timeout cost more per call than the rest of a call's client side.
      const controller = new AbortController();
      const deadline = { passed: false };
      const timer = setTimeout(() => {
        deadline.passed = true;
        controller.abort(new DOMException('The deadline passed', 'TimeoutError'));
      }, deadlineMs);
      const forward = () => controller.abort(request.signal?.reason);
      if (request.signal?.aborted) forward();
      else request.signal?.addEventListener('abort', forward, { once: true });
      try {
        if (request.onDelta && streams) {
          const answer = await streamed({ ...request, onDelta: request.onDelta }, controller.signal).catch(
            (error: unknown) => {
              const failure = failed(error, request, deadline);
              // A broken answer sent whole is tried again as a whole call's is (when retries are allowed).
              if (failure.code !== 'bad_response' || maxRetries === 0) throw failure;
              return undefined;
            },
          );
          if (answer) return answer;
        }
        return await call(request, controller.signal, deadline);
      } finally {
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', forward);
      }
    },
  };
}

/**
 * A streamed answer put together chunk by chunk (text, reasoning, each tool call by its index, usage,
 * finish reason, model) into the completion a whole call would have answered, so that the rest of the
 * reading (fromCompletion) is one code path.
 */
function gatheredAnswer() {
  let content = '';
  let reasoning = '';
  let finishReason: string | null = null;
  let model = '';
  let usage: ChatCompletion['usage'];
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  return {
    add(chunk: ChatCompletionChunk, onDelta: (delta: ModelDelta) => void): void {
      if (typeof chunk.model === 'string' && chunk.model) model = chunk.model;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return;
      if (choice.finish_reason) finishReason = choice.finish_reason;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content) {
        content += delta.content;
        onDelta({ text: delta.content });
      }
      const thought = (delta as { reasoning_content?: unknown }).reasoning_content;
      if (typeof thought === 'string' && thought) {
        reasoning += thought;
        onDelta({ reasoning: thought });
      }
      for (const part of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        const index = typeof part.index === 'number' ? part.index : calls.length;
        const call = (calls[index] ??= { id: '', name: '', arguments: '' });
        if (part.id) call.id = part.id;
        if (part.function?.name) {
          call.name += part.function.name;
          onDelta({ toolCall: part.function.name });
        }
        if (part.function?.arguments) call.arguments += part.function.arguments;
      }
    },
    finished: () => finishReason !== null,
    completion(): ChatCompletion {
      return {
        id: '',
        object: 'chat.completion',
        created: 0,
        model,
        choices: [
          {
            index: 0,
            logprobs: null,
            finish_reason: finishReason as ChatCompletion['choices'][number]['finish_reason'],
            message: {
              role: 'assistant',
              content: content || null,
              refusal: null,
              ...(reasoning ? { reasoning_content: reasoning } : {}),
              ...(calls.length
                ? {
                    tool_calls: calls
                      .filter((call) => call !== undefined)
                      .map((call) => ({
                        id: call.id,
                        type: 'function' as const,
                        function: { name: call.name, arguments: call.arguments },
                      })),
                  }
                : {}),
            },
          },
        ],
        ...(usage ? { usage } : {}),
      };
    },
  };
}

/** The SDK's own schedule: 0.5 s doubling up to 8 s, less up to a quarter of jitter. */
function backoffMs(attempt: number): number {
  return Math.min(500 * 2 ** attempt, 8_000) * (1 - Math.random() * 0.25);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

/** Where the endpoint is, to name it in errors: scheme, host and path, never credentials in the URL. */
function endpointOf(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}`;
  } catch {
    return 'the configured endpoint';
  }
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
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** A completion's usage; cached prompt tokens as OpenAI (`prompt_tokens_details`) or DeepSeek (`prompt_cache_hit_tokens`) say them. */
function usageOf(usage: NonNullable<ChatCompletion['usage']>): TokenUsage {
  const cached = tokenCount(
    usage.prompt_tokens_details?.cached_tokens ??
      (usage as { prompt_cache_hit_tokens?: number }).prompt_cache_hit_tokens,
  );
  return {
    promptTokens: tokenCount(usage.prompt_tokens),
    completionTokens: tokenCount(usage.completion_tokens),
    ...(cached ? { cachedPromptTokens: cached } : {}),
  };
}

/** More than any model's call uses: a count past it is the endpoint's mistake. */
const MAX_TOKEN_COUNT = 1_000_000_000;

/**
 * A token count as budgets, costs and counters take it: a whole number from 0 to MAX_TOKEN_COUNT; what an
 * endpoint sends that is not a number (missing, text, negative) is 0. A broken count (1e300) would
 * otherwise fail every commit of a budgeted task, or write garbage into its usage.
 */
function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? Math.min(Math.round(value), MAX_TOKEN_COUNT)
    : 0;
}

/**
 * The answer as the loop takes it, read field by field as the wire format says, whatever an endpoint
 * sent: servers that follow it roughly are common (content as parts, arguments as an object, a field
 * missing). What still makes no sense becomes something the model is told about (a call without a name
 * is an unknown tool), not an error that retries the call.
 */
function fromCompletion(completion: ChatCompletion, endpoint: string, configuredModel: string): ModelResponse {
  const choice = completion.choices?.[0];
  if (!choice?.message) {
    throw new LlmError({ code: 'bad_response', message: `The model endpoint ${endpoint} answered with no choices.` });
  }
  const toolCalls: ToolCall[] = [];
  for (const call of Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls : []) {
    if (call?.type !== 'function') continue;
    const { name, arguments: args } = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    toolCalls.push({
      // Unique in the whole conversation: a tool result is matched to its call by id.
      id: typeof call.id === 'string' && call.id ? call.id : `call_${randomUUID()}`,
      name: typeof name === 'string' ? name : '',
      arguments: typeof args === 'string' ? args : args === undefined || args === null ? '' : JSON.stringify(args),
    });
  }
  // DeepSeek and several local servers put the model's reasoning beside the content.
  const reasoning = (choice.message as { reasoning_content?: unknown }).reasoning_content;
  const finishReason: unknown = choice.finish_reason;
  return {
    message: {
      role: 'assistant',
      content: contentOf(choice.message.content),
      ...(toolCalls.length ? { toolCalls } : {}),
    },
    ...(typeof reasoning === 'string' && reasoning ? { reasoning } : {}),
    ...(completion.usage ? { usage: usageOf(completion.usage) } : {}),
    ...(typeof finishReason === 'string' && finishReason ? { finishReason } : {}),
    model: typeof completion.model === 'string' && completion.model ? completion.model : configuredModel,
  };
}

/** A message's text: a string, or the text of its parts (as some servers send it); anything else is none. */
function contentOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts = content
    .map((part: unknown) =>
      part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string'
        ? (part as { text: string }).text
        : '',
    )
    .filter(Boolean);
  return texts.length ? texts.join('') : null;
}

function toLlmError(error: unknown, signal: AbortSignal | undefined, endpoint: string): LlmError {
  if (error instanceof LlmError) return error;
  if (error instanceof OpenAI.APIUserAbortError || signal?.aborted) {
    return new LlmError({ code: 'aborted', message: 'The LLM request was aborted.', cause: error });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new LlmError({ code: 'timeout', message: `The LLM request to ${endpoint} timed out.`, cause: error });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new LlmError({
      code: 'connection',
      message: `Could not reach the LLM endpoint ${endpoint}: ${error.message}`,
      cause: error,
    });
  }
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    // Seconds (an HTTP date, or anything else, is none), kept within what agentq believes of a provider.
    const retryAfterMs = providerWaitMs(error.headers?.get?.('retry-after'));
    const code = codeForStatus(error.status, { code: error.code, type: error.type });
    return new LlmError({
      code,
      status: error.status,
      message:
        code === 'quota_exceeded'
          ? `The LLM endpoint ${endpoint} answered ${error.status} (insufficient_quota: the account's quota or billing, which waiting does not fix): ${error.message}`
          : `The LLM endpoint ${endpoint} answered ${error.status}: ${error.message}`,
      ...(retryAfterMs !== undefined ? { retryAfterSeconds: retryAfterMs / 1000 } : {}),
      cause: error,
    });
  }
  // A 2xx the SDK could not read: a body cut off, or not JSON.
  return new LlmError({
    code: 'bad_response',
    message: `The LLM endpoint ${endpoint} sent a broken answer: ${(error as Error)?.message ?? String(error)}`,
    cause: error,
  });
}
