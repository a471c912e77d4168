export * from './agentq-error.js';
export * from './tasks.js';
export * from './agents.js';
export * from './events.js';
export * from './sse.js';
export * from './batch.js';
