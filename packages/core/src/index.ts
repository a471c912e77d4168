export * from './agent-events.js';
export * from './agent-outcome.js';
export * from './journal.js';
export * from './stop-conditions.js';
export * from './run-tool-call.js';
export * from './call-model.js';
export * from './execute-tools.js';
export * from './run-agent.js';
