/** A mistake in how the command was called: printed without a stack trace, exit status 2. */
import { AgentqError } from '@agentq/contract';
export class UsageError extends AgentqError {
  readonly code = 'usage';
  readonly retryable = false;
}
