export * from './tasks.js';
export * from './events.js';
