import path from 'node:path';
import { defineConfig } from 'vitest/config';

const root = import.meta.dirname;

export default defineConfig({
  resolve: {
    // Unit tests run the TypeScript sources; end-to-end tests spawn the built processes.
    alias: [
      { find: /^@agentq\/(contract|config|telemetry|protocol|llm|tools|core|queue)$/, replacement: path.join(root, 'packages/$1/src/index.ts') },
      { find: /^@agentq\/(api|worker|cli)$/, replacement: path.join(root, 'apps/$1/src/index.ts') },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'tests/**/*.test.ts'],
    globalSetup: ['tests/setup/redis-server.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
