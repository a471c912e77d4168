export * from './messages.js';
export * from './normalize-messages.js';
