/**
 * An in-process `LanguageModel` that plays a script, for unit tests of the agent loop. Each call
 * takes the next step of the script: an answer, a function of the request, or an error to throw.
 * Every request is recorded. Cross-process tests use the OpenAI-wire double instead.
 */
import type { AssistantMessage, ToolCall } from '@agentq/protocol';
import type { LanguageModel, ModelRequest, ModelResponse } from './language-model.js';

export interface ScriptedTurn {
  content?: string | null;
  toolCalls?: Array<Omit<ToolCall, 'id' | 'arguments'> & { id?: string; arguments: string | Record<string, unknown> }>;
  reasoning?: string;
  usage?: { promptTokens: number; completionTokens: number };
}

export type ScriptStep = ScriptedTurn | Error | ((request: ModelRequest) => ScriptedTurn | Promise<ScriptedTurn>);

export interface ScriptedModel extends LanguageModel {
  requests: ModelRequest[];
}

export function createScriptedModel(options: { script: ScriptStep[]; modelId?: string }): ScriptedModel {
  const requests: ModelRequest[] = [];
  let callIndex = 0;
  return {
    modelId: options.modelId ?? 'scripted',
    requests,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      // Keep a copy: the loop may append to the array it passed.
      requests.push({ ...request, messages: structuredClone([...request.messages]) });
      const step = options.script[callIndex++];
      if (step === undefined)
        throw new Error(`The scripted model has no step ${callIndex} (script has ${options.script.length}).`);
      if (step instanceof Error) throw step;
      const turn = typeof step === 'function' ? await step(request) : step;
      const toolCalls = (turn.toolCalls ?? []).map((call, index) => ({
        id: call.id ?? `call_${callIndex}_${index}`,
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      }));
      const message: AssistantMessage = {
        role: 'assistant',
        content: turn.content ?? null,
        ...(toolCalls.length ? { toolCalls } : {}),
      };
      return {
        message,
        model: options.modelId ?? 'scripted',
        ...(turn.reasoning ? { reasoning: turn.reasoning } : {}),
        ...(turn.usage ? { usage: turn.usage } : {}),
      };
    },
  };
}
