export * from './start-api.js';
export * from './create-app.js';
export * from './api-error.js';
export * from './api-server.js';
export { openApiDocument } from './openapi.js';
