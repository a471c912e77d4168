/**
 * One error family: every error a caller handles, in every package, is an AgentqError with a stable
 * snake_case `code`, a boolean `retryable`, and its class's name (what logs show).
 */
import { AGENTQ_ERROR_CODES, AgentqError, parseBatch, treeCursorOf } from '@agentq/contract';
import { loadConfig } from '@agentq/config';
import { LlmError } from '@agentq/llm';
import {
  CommitNotReplicated,
  EventsChangedError,
  IdempotencyMismatchError,
  NoRoomError,
  RoomHoldLostError,
  TaskMissingError,
} from '@agentq/store';
import { EnqueueError, ForkError } from '@agentq/tasks';
import { BlockedDestinationError, ToolError, WorkdirTooLargeError } from '@agentq/tools';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../apps/api/src/api-error.js';
import { ClientError } from '../../apps/cli/src/api-client.js';
import { UsageError } from '../../apps/cli/src/usage-error.js';
import { WaitForRateLimit } from '../../apps/worker/src/rate-limited-model.js';

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

const room = { unfinished: 1, stored: 1 };
const cases: Array<[string, unknown, boolean]> = [
  ['BatchLineError', thrownBy(() => parseBatch('{"prompt":')), false],
  ['TreeCursorError', thrownBy(() => treeCursorOf('t', 'x')), false],
  ['ConfigError', thrownBy(() => loadConfig({ env: { PORT: 'eighty' }, envFile: false })), false],
  ['LlmError', new LlmError({ code: 'rate_limited', message: 'slow down', status: 429 }), true],
  ['LlmError', new LlmError({ code: 'unauthorized', message: 'bad key', status: 401 }), false],
  ['CommitNotReplicated', new CommitNotReplicated('t', 1, 100), true],
  ['NoRoomError', new NoRoomError('acme', 2, 1, 1, room), true],
  ['TaskMissingError', new TaskMissingError('t'), false],
  ['RoomHoldLostError', new RoomHoldLostError('no hold'), true],
  ['EventsChangedError', new EventsChangedError('changed'), true],
  ['IdempotencyMismatchError', new IdempotencyMismatchError([{ index: 0, idempotencyKey: 'k', taskId: 't' }]), false],
  ['EnqueueError', new EnqueueError('Redis refused', new Error('OOM')), true],
  ['ForkError', new ForkError('its memory is gone'), false],
  ['BlockedDestinationError', new BlockedDestinationError('intranet', '10.0.0.1'), false],
  ['ToolError', new ToolError('path_outside_workdir', '../etc/passwd is outside'), false],
  ['WorkdirTooLargeError', new WorkdirTooLargeError({ bytes: 2, entries: 1 }, { bytes: 1, entries: 1 }), false],
  ['ApiError', new ApiError('limit_reached', 'past its limit'), true],
  ['ApiError', new ApiError('not_found', 'no such task'), false],
  ['ClientError', new ClientError('no answer'), true],
  ['ClientError', new ClientError('bad field', 400, undefined, 'invalid_request'), false],
  ['UsageError', new UsageError('--pools takes a list'), false],
  ['WaitForRateLimit', new WaitForRateLimit('gpt', Date.now(), 'tokens per minute'), true],
];

describe('the error family', () => {
  it.each(cases)('%s is an AgentqError with a stable code', (name, error, retryable) => {
    expect(error).toBeInstanceOf(AgentqError);
    const agentq = error as AgentqError;
    expect(agentq.name).toBe(name);
    expect(agentq.code).toMatch(/^[a-z][a-z0-9_]*$/);
    // One of the codes the API has an answer for (apps/api/src/api-error.ts).
    expect(AGENTQ_ERROR_CODES).toContain(agentq.code);
    expect(agentq.retryable).toBe(retryable);
    expect(agentq.message.length).toBeGreaterThan(0);
  });

  it('keeps the code a caller branches on', () => {
    expect((cases.find(([name]) => name === 'NoRoomError')![1] as AgentqError).code).toBe('no_room');
    expect(new ClientError('bad field', 400, undefined, 'invalid_request').code).toBe('invalid_request');
    expect(new ClientError('no answer').code).toBe('unreachable');
  });
});
