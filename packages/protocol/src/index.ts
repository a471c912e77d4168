export * from './messages.js';
export * from './normalize-messages.js';
export * from './split-reasoning.js';
export * from './parse-fences.js';
export * from './context-view.js';
