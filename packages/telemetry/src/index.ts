export * from './logger.js';
export * from './metrics.js';
export * from './task-telemetry.js';
export * from './metrics-server.js';
export * from './tracing.js';
export * from './terminal-safe.js';
