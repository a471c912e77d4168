/**
 * Answers asked for as a stream (`onDelta`): the same answer as a whole call gives, its pieces passed
 * on as they come; a stream that breaks, or an endpoint that does not stream, falls back to a whole call.
 */
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ModelDelta } from './language-model.js';
import { startOpenAIDouble, type DoubleAnswer, type OpenAIDouble } from './openai-double.js';
import { createOpenAIModel } from './openai-model.js';

let double: OpenAIDouble;
beforeEach(async () => {
  double = await startOpenAIDouble();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await double.close();
});

const model = () => createOpenAIModel({ model: 'test-model', baseURL: double.baseURL, maxRetries: 1 });
const messages = [{ role: 'user' as const, content: 'hi' }];

describe('streamed answers', () => {
  const answers: Record<string, DoubleAnswer> = {
    text: { content: 'A whole paragraph of text that comes in pieces.', reasoning: 'thinking first' },
    'tool calls': {
      content: null,
      toolCalls: [
        { name: 'write_file', arguments: { path: 'a.txt', content: 'x'.repeat(50) } },
        { name: 'bash', arguments: { command: 'ls -la' } },
      ],
    },
    fences: { content: 'I will run it.\n```bash\nls -la\n```\n' },
  };
  for (const [kind, answer] of Object.entries(answers)) {
    it(`gives the same ${kind} answer as a whole call, and passes its pieces on as they come`, async () => {
      double.setRules([{ reply: answer }]);
      const whole = await model().generate({ messages });
      const deltas: ModelDelta[] = [];
      const streamed = await model().generate({ messages, onDelta: (delta) => deltas.push(delta) });
      expect(double.requests.map((request) => request.stream ?? false)).toEqual([false, true]);
      const sameIds = (response: typeof whole) => ({
        ...response,
        message: { ...response.message, toolCalls: response.message.toolCalls?.map((call) => ({ ...call, id: '' })) },
      });
      expect(sameIds(streamed)).toEqual(sameIds(whole));
      expect(deltas.map((delta) => delta.text ?? '').join('')).toBe(answer.content ?? '');
      expect(deltas.flatMap((delta) => (delta.toolCall ? [delta.toolCall] : []))).toEqual(
        (answer.toolCalls ?? []).map((call) => call.name),
      );
      if (answer.content) expect(deltas.filter((delta) => delta.text).length).toBeGreaterThan(1);
    });
  }

  it('reads the stream from the connection, with no web stream around it (a worker CPU cost, B2)', async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    double.setRules([{ reply: { content: 'pieces of an answer' } }]);
    const deltas: ModelDelta[] = [];
    const response = await model().generate({ messages, onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('pieces of an answer');
    expect(deltas.length).toBeGreaterThan(1);
    expect(toWeb).not.toHaveBeenCalled();
  });

  it('stops reading a stream when its signal fires mid-answer', async () => {
    double.setRules([{ reply: { content: 'an answer that takes its time to come', chunkDelayMs: 100 } }]);
    const controller = new AbortController();
    const pending = model().generate({
      messages,
      signal: controller.signal,
      onDelta: () => controller.abort(),
    });
    await expect(pending).rejects.toMatchObject({ code: 'aborted' });
    // Not asked again as a whole call: the caller gave up.
    expect(double.requests.map((request) => request.stream ?? false)).toEqual([true]);
  });

  it('falls back to a whole call when the stream breaks, saying the pieces so far are void', async () => {
    double.setRules([{ reply: { fault: 'no-done' }, times: 1 }, { reply: { content: 'the whole answer' } }]);
    const deltas: ModelDelta[] = [];
    const response = await model().generate({ messages, onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('the whole answer');
    expect(deltas).toEqual([{ text: 'this ans' }, { restart: true }]);
    expect(double.requests.map((request) => request.stream ?? false)).toEqual([true, false]);
  });

  it('reads the answer of an endpoint that does not stream as a whole one, in the same request', async () => {
    const completion = {
      id: 'x',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'no stream here' }, finish_reason: 'stop' }],
    };
    double.setRules([{ reply: { body: completion } }]);
    const deltas: ModelDelta[] = [];
    const asked = model();
    const response = await asked.generate({ messages, onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('no stream here');
    expect(deltas).toEqual([]);
    expect(double.requests.map((request) => request.stream ?? false)).toEqual([true]);
    // It does not stream: the next call asks it for a whole answer at once.
    const next = await asked.generate({ messages, onDelta: (delta) => deltas.push(delta) });
    expect(next.message.content).toBe('no stream here');
    expect(double.requests.map((request) => request.stream ?? false)).toEqual([true, false]);
  });
});
