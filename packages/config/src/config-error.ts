import { AgentqError } from '@agentq/contract';

/** A setting (a variable, or the configuration file) is wrong; the message says which and what to fix. */
export class ConfigError extends AgentqError {
  readonly code = 'invalid_config';
  readonly retryable = false;
}
