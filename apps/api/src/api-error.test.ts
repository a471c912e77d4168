/**
 * How the API answers what a route throws, over real HTTP (express and the error handler the API
 * mounts): each of agentq's errors by its code, anything else a 500 with the error logged.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { AgentqError } from '@agentq/contract';
import { UnknownPoolError } from '@agentq/scheduling';
import {
  CommitNotReplicated,
  EventsChangedError,
  KeysChangedError,
  NoRoomError,
  RoomHoldLostError,
  TaskMissingError,
} from '@agentq/store';
import { DailyLimitError, ForkError } from '@agentq/tasks';
import { createLogger } from '@agentq/telemetry';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { errorHandler } from './api-error.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** An app whose one route throws `error`, with the API's error handler; what GET answers, and the log. */
async function answerTo(error: unknown, options: { redisReady?: boolean } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ name: 'agentq-test', format: 'json', destination });
  const app = express();
  app.get('/v1/thing', () => {
    throw error;
  });
  app.use(errorHandler({ redisReady: () => options.redisReady ?? true, logger }));
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/thing`);
  const body = (await response.json()) as { error: { code: string; message: string; details?: unknown } };
  return { status: response.status, retryAfter: response.headers.get('retry-after'), ...body.error, lines };
}

const room = { unfinished: 2, stored: 100 };
const tomorrow = new Date(Date.now() + 3_600_000);

describe("the API's answer to an error", () => {
  it.each([
    // Before, each of these four was a 500: no `instanceof` of the chain named it.
    ['a task gone under a step', new TaskMissingError('t-1'), 404, 'not_found'],
    ["a submit's room hold lost", new RoomHoldLostError('the hold of this submit expired'), 503, 'unavailable'],
    [
      'events compacted while read',
      new EventsChangedError('the packed events changed while they were read'),
      503,
      'unavailable',
    ],
    ['idempotency keys that kept changing', new KeysChangedError('the keys kept changing'), 503, 'unavailable'],
    [
      'work for an agent the file does not declare',
      new UnknownPoolError('nope', ['planner', 'coder']),
      400,
      'invalid_request',
    ],
    ['a tenant past its room', new NoRoomError('acme', 5, 2, 3, room), 429, 'limit_reached'],
    [
      'a daily limit spent',
      new DailyLimitError('submit', 'acme', { tokens: 10, usd: 0 }, { tokens: 5 }, tomorrow),
      429,
      'limit_reached',
    ],
    ['a fork refused', new ForkError('its memory is gone'), 409, 'conflict'],
    ['a commit no replica confirmed', new CommitNotReplicated('t-1', 1, 100), 503, 'unavailable'],
  ] as const)('answers %s by its code', async (_, error, status, code) => {
    const answer = await answerTo(error);
    expect({ status: answer.status, code: answer.code }).toEqual({ status, code });
    // (a tenant past its room is told which limit, in the API's words: below)
    if (!(error instanceof NoRoomError)) expect(answer.message).toContain(error.message);
    if (status === 503 || status === 429) expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    expect(answer.lines).toEqual([]);
  });

  it("says what was past a tenant's limit, and when to try again", async () => {
    const answer = await answerTo(new NoRoomError('acme', 5, 2, 3, room));
    expect(answer.details).toEqual({ tenant: 'acme', unfinished: 2, requested: 5, limit: 2 });
    expect(answer.retryAfter).toBe('5');
  });

  it('answers an error it does not know with a 500, and logs it whole', async () => {
    const answer = await answerTo(new Error('the invariant broke'));
    expect({ status: answer.status, code: answer.code }).toEqual({ status: 500, code: 'internal' });
    // The client learns nothing of agentq's insides; the log has it all.
    expect(answer.message).toBe('Internal error; see the API logs.');
    expect(answer.lines).toHaveLength(1);
    expect(answer.lines[0]).toMatchObject({
      level: 'error',
      msg: 'request failed',
      method: 'GET',
      path: '/v1/thing',
      err: { message: 'the invariant broke' },
    });
  });

  it("answers agentq's own faults as a 500, logged, and any 500 as a 503 while Redis is away", async () => {
    class BrokenRecord extends AgentqError {
      readonly code = 'invalid_record';
      readonly retryable = false;
    }
    const fault = await answerTo(new BrokenRecord('task t-1 holds a status of "???"'));
    expect({ status: fault.status, code: fault.code, logged: fault.lines.length }).toEqual({
      status: 500,
      code: 'internal',
      logged: 1,
    });
    const away = await answerTo(new Error('Connection is closed.'), { redisReady: false });
    expect({ status: away.status, code: away.code, retryAfter: away.retryAfter }).toEqual({
      status: 503,
      code: 'unavailable',
      retryAfter: '2',
    });
  });

  it('refuses, at compile time, an error whose code the API has no answer for', () => {
    class Unlisted extends AgentqError {
      // @ts-expect-error 'brand_new' is not in AGENTQ_ERROR_CODES (packages/contract/src/error-codes.ts)
      readonly code = 'brand_new';
      readonly retryable = false;
    }
    // At run time it is still answered: a 500, logged (the check above is the compiler's).
    expect(new Unlisted('x')).toBeInstanceOf(AgentqError);
  });
});
