import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LlmError } from './errors.js';
import { startOpenAIDouble, type OpenAIDouble } from './openai-double.js';
import { createOpenAIModel } from './openai-model.js';

let double: OpenAIDouble;
beforeEach(async () => {
  double = await startOpenAIDouble();
});
afterEach(async () => {
  await double.close();
});

const model = () => createOpenAIModel({ model: 'test-model', baseURL: double.baseURL, maxRetries: 2 });

describe('the OpenAI-compatible model over the wire double', () => {
  it('sends messages and tools in the OpenAI format and reads answer, tool calls and usage', async () => {
    double.setRules([
      {
        reply: {
          content: 'Let me look.',
          toolCalls: [{ id: 'call_1', name: 'bash', arguments: { command: 'ls' } }],
          usage: { promptTokens: 12, completionTokens: 5 },
        },
      },
    ]);
    const response = await model().generate({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'list files' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'call_0', name: 'bash', arguments: '{"command":"pwd"}' }],
        },
        { role: 'tool', toolCallId: 'call_0', name: 'bash', content: '/work' },
      ],
      tools: [
        {
          name: 'bash',
          description: 'Run bash',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      ],
    });
    expect(response.message).toEqual({
      role: 'assistant',
      content: 'Let me look.',
      toolCalls: [{ id: 'call_1', name: 'bash', arguments: '{"command":"ls"}' }],
    });
    expect(response.usage).toEqual({ promptTokens: 12, completionTokens: 5 });
    expect(response.finishReason).toBe('tool_calls');
    const [request] = double.requests;
    expect(request!.model).toBe('test-model');
    expect(request!.messages[2]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'bash', arguments: '{"command":"pwd"}' } }],
    });
    expect(request!.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_0', content: '/work' });
    expect(request!.tools?.[0]).toMatchObject({ type: 'function', function: { name: 'bash' } });
  });

  it('keeps reasoning_content apart from the answer', async () => {
    double.setRules([{ reply: { content: '4', reasoning: '2+2 is 4' } }]);
    const response = await model().generate({ messages: [{ role: 'user', content: '2+2?' }] });
    expect(response.reasoning).toBe('2+2 is 4');
    expect(response.message.content).toBe('4');
  });

  it('retries a 429, honouring Retry-After, then succeeds', async () => {
    double.setRules([
      {
        times: 1,
        reply: { error: { status: 429, message: 'slow down', type: 'rate_limit', headers: { 'retry-after': '0' } } },
      },
      { reply: { content: 'after the wait' } },
    ]);
    const response = await model().generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.message.content).toBe('after the wait');
    expect(double.requests).toHaveLength(2);
  });

  it('fails at once on 401 with the provider message, without retrying', async () => {
    double.setRules([
      { reply: { error: { status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error' } } },
    ]);
    const error = (await model()
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught)) as LlmError;
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: 'unauthorized', status: 401, retryable: false });
    expect(error.message).toMatch(/401.*Incorrect API key provided/);
    expect(double.requests).toHaveLength(1);
  });

  it('gives up on a 503 after its retries with a retryable error', async () => {
    double.setRules([{ reply: { error: { status: 503, message: 'overloaded', headers: { 'retry-after': '0' } } } }]);
    const error = await createOpenAIModel({ model: 'm', baseURL: double.baseURL, maxRetries: 1 })
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'server_error', status: 503, retryable: true });
    expect(double.requests).toHaveLength(2);
  });

  it('aborts an in-flight request when its signal fires', async () => {
    double.setRules([{ reply: { content: 'too late', delayMs: 10_000 } }]);
    const controller = new AbortController();
    const pending = model().generate({ messages: [{ role: 'user', content: 'hi' }], signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ code: 'aborted' });
  });
});

describe('the wire double', () => {
  it('streams content, tool calls and usage the way the SDK expects', async () => {
    double.setRules([
      {
        reply: {
          content: 'streamed answer',
          toolCalls: [{ id: 'c9', name: 'python', arguments: { code: 'print(1)' } }],
        },
      },
    ]);
    const client = new OpenAI({ baseURL: double.baseURL, apiKey: 'test' });
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'go' }],
      stream_options: { include_usage: true },
    });
    const completion = await stream.finalChatCompletion();
    expect(completion.choices[0]!.message.content).toBe('streamed answer');
    expect(completion.choices[0]!.message.tool_calls?.[0]).toMatchObject({
      id: 'c9',
      function: { name: 'python', arguments: '{"code":"print(1)"}' },
    });
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('chooses the rule by matching the request, and says so when none matches', async () => {
    double.setRules([{ match: (request) => request.messages.at(-1)?.content === 'ping', reply: { content: 'pong' } }]);
    expect((await model().generate({ messages: [{ role: 'user', content: 'ping' }] })).message.content).toBe('pong');
    const error = await createOpenAIModel({ model: 'm', baseURL: double.baseURL, maxRetries: 0 })
      .generate({ messages: [{ role: 'user', content: 'other' }] })
      .catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/no rule for this request/);
    expect(error).toMatchObject({ retryable: false, unreachable: false });
  });
});

describe('LLM errors', () => {
  it.each([
    [400, 'bad_request'],
    [401, 'unauthorized'],
    [403, 'forbidden'],
    [404, 'not_found'],
  ] as const)('fails at once on %i with the provider message', async (status, code) => {
    double.setRules([{ reply: { error: { status, message: `provider says ${status}` } } }]);
    const error = await model()
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code,
      status,
      retryable: false,
      message: expect.stringContaining(`provider says ${status}`),
    });
    expect(double.requests).toHaveLength(1);
  });

  it.each([408, 409, 500, 502, 503])('retries %i, then succeeds', async (status) => {
    double.setRules([
      { times: 1, reply: { error: { status, message: 'transient', headers: { 'retry-after': '0' } } } },
      { reply: { content: 'recovered' } },
    ]);
    expect((await model().generate({ messages: [{ role: 'user', content: 'hi' }] })).message.content).toBe('recovered');
    expect(double.requests).toHaveLength(2);
  });

  it('retries a connection error', async () => {
    const error = await createOpenAIModel({ model: 'm', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0 })
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'connection', retryable: true });
  });

  it.each([
    ['30', 30],
    ['4294967295', 300],
    ['-5', undefined],
    // An HTTP date: the wait until it (provider-limits.test.ts), none for one past.
    ['Wed, 21 Oct 2015 07:28:00 GMT', 0],
    // None: the caller's backoff (models.<model>.outage), not 0 (`Number(null)`), which would wait nothing.
    [undefined, undefined],
  ])('says how long a 429 asked to wait (Retry-After: %s), believed up to 5 minutes', async (header, seconds) => {
    double.setRules([
      {
        reply: {
          error: { status: 429, message: 'slow down', headers: header === undefined ? {} : { 'retry-after': header } },
        },
      },
    ]);
    const error = (await createOpenAIModel({ model: 'm', baseURL: double.baseURL, maxRetries: 0 })
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught)) as LlmError;
    expect(error.code).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(seconds);
  });

  it.each([
    [429, '30', 1],
    [503, '30', 1],
    [429, '1', 3],
  ])(
    'lets the SDK sleep out a short wait only: a %s with Retry-After: %s is asked %s times in the call',
    async (status, header, requests) => {
      double.setRules([{ reply: { error: { status, message: 'wait', headers: { 'retry-after': header } } } }]);
      const before = double.requests.length;
      const error = (await createOpenAIModel({ model: 'm', baseURL: double.baseURL, maxRetries: 2 })
        .generate({ messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught)) as LlmError;
      // A longer wait is the worker's to hold, its slot given back (outage-guarded-model.ts).
      expect(double.requests.length - before).toBe(requests);
      expect(error.status).toBe(status);
    },
    20_000,
  );

  it.each([
    ['its code and type', 'insufficient_quota'],
    ['its type only', undefined],
  ])(
    'fails a 429 that says the quota is spent (insufficient_quota, in %s) at once: waiting does not fix billing',
    async (_, code) => {
      double.setRules([
        {
          reply: {
            error: {
              status: 429,
              message: 'You exceeded your current quota, please check your plan and billing details.',
              type: 'insufficient_quota',
              ...(code ? { code } : {}),
            },
          },
        },
      ]);
      const before = double.requests.length;
      // The SDK would retry a 429: not this one.
      const error = (await createOpenAIModel({ model: 'm', baseURL: double.baseURL, maxRetries: 2 })
        .generate({ messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught)) as LlmError;
      expect(double.requests.length - before).toBe(1);
      expect(error).toMatchObject({ code: 'quota_exceeded', status: 429, retryable: false, unreachable: false });
      expect(error.message).toMatch(/answered 429 \(insufficient_quota: .*\): 429 You exceeded your current quota/);
    },
  );

  it('reads an answer that follows the wire format only roughly, and tells the model what makes no sense', async () => {
    const message = (fields: Record<string, unknown>) => ({
      body: {
        id: 'x',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', ...fields }, finish_reason: 'stop' }],
      },
    });
    double.setRules([
      // No `model`, content as parts.
      {
        times: 1,
        reply: message({
          content: [{ type: 'text', text: 'hello ' }, { type: 'image_url' }, { type: 'text', text: 'there' }],
        }),
      },
      // Arguments as an object, an id as a number, a call without a name.
      {
        times: 1,
        reply: message({
          content: 7,
          tool_calls: [
            { id: 7, type: 'function', function: { name: 'bash', arguments: { command: 'ls' } } },
            { type: 'function', function: {} },
          ],
        }),
      },
    ]);
    const parts = await model().generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(parts).toMatchObject({
      message: { role: 'assistant', content: 'hello there' },
      model: 'test-model',
      finishReason: 'stop',
    });
    const calls = await model().generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(calls.message).toEqual({
      role: 'assistant',
      content: null,
      toolCalls: [
        { id: expect.stringMatching(/^call_/), name: 'bash', arguments: '{"command":"ls"}' },
        { id: expect.stringMatching(/^call_/), name: '', arguments: '' },
      ],
    });
    // Each call has an id of its own, whatever the endpoint sent: results are matched to calls by id.
    expect(new Set(calls.message.toolCalls!.map((call) => call.id)).size).toBe(2);
    expect(double.requests).toHaveLength(2);
  });

  it('takes a token count an endpoint broke as a whole number from 0 to a billion', async () => {
    double.setRules([
      { reply: { content: 'ok', usage: { promptTokens: -5, completionTokens: 1e300, cachedPromptTokens: 2.6 } } },
    ]);
    const { usage } = await model().generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(usage).toEqual({ promptTokens: 0, completionTokens: 1_000_000_000, cachedPromptTokens: 3 });
  });

  it('waits as long as Retry-After says before retrying', async () => {
    double.setRules([
      { times: 1, reply: { error: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } } } },
      { reply: { content: 'ok' } },
    ]);
    await model().generate({ messages: [{ role: 'user', content: 'hi' }] });
    expect(double.receivedAt[1]! - double.receivedAt[0]!).toBeGreaterThanOrEqual(950);
  });

  it.each(['truncated', 'not-json', 'no-choices'] as const)(
    'retries a 200 whose body is broken (%s), then succeeds',
    async (fault) => {
      double.setRules([{ times: 2, reply: { fault } }, { reply: { content: 'whole at last' } }]);
      expect((await model().generate({ messages: [{ role: 'user', content: 'hi' }] })).message.content).toBe(
        'whole at last',
      );
      expect(double.requests).toHaveLength(3);
    },
  );

  it('gives up on broken bodies after its retries with a retryable error naming the endpoint', async () => {
    double.setRules([{ reply: { fault: 'not-json' } }]);
    const error = (await model()
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught)) as LlmError;
    expect(error).toMatchObject({ code: 'bad_response', retryable: true });
    expect(error.message).toContain(`${double.baseURL} (model test-model)`);
    expect(double.requests).toHaveLength(3);
  });

  it("bounds a hung endpoint by the call's deadline, retries included, and never names the key", async () => {
    double.setRules([{ reply: { fault: 'hang' } }]);
    const started = Date.now();
    const error = (await createOpenAIModel({
      model: 'slow-model',
      baseURL: double.baseURL,
      apiKey: 'sk-secret-key',
      timeoutMs: 300,
      maxRetries: 5,
      deadlineMs: 1_000,
    })
      .generate({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught)) as LlmError;
    // Its 6 attempts of 300 ms and the SDK's backoff between them (0.5 s doubling, less a quarter at
    // most) would take over 13 s: ended by the 1 s deadline, it is well under that however loaded the
    // machine is.
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(error).toMatchObject({ code: 'deadline_exceeded', retryable: false });
    expect(error.message).toMatch(
      new RegExp(
        `^The model endpoint ${double.baseURL.replace(/[.]/g, '\\.')} \\(model slow-model\\) gave no usable answer within 1 s`,
      ),
    );
    expect(error.message).not.toContain('sk-secret-key');
    // It was tried more than once in that time: each attempt timed out on its own.
    expect(double.requests.length).toBeGreaterThan(1);
  });

  it('keeps an answer with an unpaired surrogate as the model wrote it', async () => {
    double.setRules([{ reply: { content: 'half an emoji: \ud83d!' } }]);
    expect((await model().generate({ messages: [{ role: 'user', content: 'hi' }] })).message.content).toBe(
      'half an emoji: \ud83d!',
    );
  });
});
