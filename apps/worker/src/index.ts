export * from './start-worker.js';
export * from './run-agent-job.js';
export * from './cancel-listener.js';
export * from './system-prompts.js';
export * from './tool-isolation.js';
export * from './check-mcp-servers.js';
