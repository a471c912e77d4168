export * from './language-model.js';
export * from './errors.js';
export * from './openai-model.js';
export * from './openai-double.js';
export * from './scripted-model.js';
export * from './loop-turn.js';
export * from './prices.js';
export * from './provider-limits.js';
