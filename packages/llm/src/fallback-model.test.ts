import { describe, expect, it } from 'vitest';
import { LlmError } from './errors.js';
import { withFallbacks } from './fallback-model.js';
import type { LanguageModel } from './language-model.js';

function model(id: string, outcome: 'answer' | LlmError, calls: string[]): LanguageModel {
  return {
    modelId: id,
    async generate() {
      calls.push(id);
      if (outcome !== 'answer') throw outcome;
      return { message: { role: 'assistant', content: `from ${id}` }, model: id };
    },
  };
}

describe('withFallbacks', () => {
  it('asks the next model when one fails for good, and says which answered', async () => {
    const calls: string[] = [];
    const down = new LlmError({ code: 'server_error', message: '503', status: 503 });
    const chain = withFallbacks([model('big', down, calls), model('small', 'answer', calls)]);
    expect(chain.modelId).toBe('big');
    const response = await chain.generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.model).toBe('small');
    expect(calls).toEqual(['big', 'small']);
  });

  it('does not fall back from a cancelled call, and throws the last error when every model failed', async () => {
    const calls: string[] = [];
    const aborted = new LlmError({ code: 'aborted', message: 'cancelled' });
    await expect(
      withFallbacks([model('a', aborted, calls), model('b', 'answer', calls)]).generate({ messages: [] }),
    ).rejects.toBe(aborted);
    expect(calls).toEqual(['a']);
    const limited = new LlmError({ code: 'rate_limited', message: '429', status: 429 });
    await expect(
      withFallbacks([
        model('a', new LlmError({ code: 'not_found', message: 'no such model', status: 404 }), calls),
        model('b', limited, calls),
      ]).generate({ messages: [] }),
    ).rejects.toBe(limited);
  });
});
