/** `agentq approve ID CALL` and `agentq reject ID CALL`: decide a call that waits for approval. */
import type { ApiClient } from '../api-client.js';
import { UsageError } from '../usage-error.js';

export async function decideCommand(
  client: ApiClient,
  approve: boolean,
  taskId: string | undefined,
  callId: string | undefined,
  flags: { reason?: string; json?: boolean },
): Promise<number> {
  const verb = approve ? 'approve' : 'reject';
  if (!taskId || !callId)
    throw new UsageError(
      `usage: agentq ${verb} ID CALL [--reason TEXT] (the task's waiting calls: agentq get ID, waitingFor.calls)`,
    );
  const answer = await client.call<{ id: string; status: string; remaining: number }>(
    'POST',
    `/v1/tasks/${encodeURIComponent(taskId)}/approvals`,
    { callId, approve, ...(flags.reason ? { reason: flags.reason } : {}) },
  );
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(answer)}\n`
      : answer.remaining
        ? `${approve ? 'approved' : 'rejected'}; ${answer.remaining} more call${answer.remaining === 1 ? '' : 's'} of ${answer.id} wait\n`
        : `${approve ? 'approved' : 'rejected'}; ${answer.id} is ${answer.status} again\n`,
  );
  return 0;
}
