import path from 'node:path';
import { defineConfig } from 'vitest/config';

const root = import.meta.dirname;

/**
 * The tiers, run in this order by CI (`npm test` runs them all): unit (no Redis, no jail, no agentq
 * process; `npm run test:unit`, under a minute), then integration (a real Redis, real tool processes and
 * jails), cells (some of integration again, the install in 4 cells), e2e (agentq's own processes), browser (Chromium), security (attacks through a real worker),
 * hosts (agentq across network namespaces). Each tier but unit gets a redis-server of its own.
 */
const UNIT = [
  'tests/unit/**/*.test.ts',
  'apps/*/src/**/*.test.ts',
  'packages/{client,config,contract,core,llm,protocol,telemetry}/src/**/*.test.ts',
  'packages/tools/src/{interactive-guard,http-fetch-tool,web-search-tool,toolsets,file-times}.test.ts',
];
const INTEGRATION = ['packages/{store,scheduling,tasks,tools}/src/**/*.test.ts', 'tests/integration/**/*.test.ts'];
const withRedis = ['tests/setup/redis-server.ts'];
/**
 * Integration tests run again with every stack's install in 4 cells (AGENTQ_CELLS, tests/helpers/stack.ts):
 * what a task does end to end, across cells' lists, queues, sweeps and limits.
 */
const IN_CELLS = [
  'tests/integration/{task-lifecycle,planner,retention-and-pools,concurrency-keys,webhooks,schedules}.test.ts',
  'tests/integration/{batches,budgets,fork-and-models,counts,overview,admission,live-deltas,loop-over-http}.test.ts',
];

export default defineConfig({
  resolve: {
    // Unit tests run the TypeScript sources; end-to-end tests spawn the built processes.
    alias: [
      {
        find: /^@agentq\/(contract|client|config|telemetry|protocol|llm|tools|core|store|scheduling|tasks)$/,
        replacement: path.join(root, 'packages/$1/src/index.ts'),
      },
      { find: /^@agentq\/(tools|telemetry|config)\/([\w-]+)$/, replacement: path.join(root, 'packages/$1/src/$2.ts') },
      { find: /^@agentq\/(api|worker|cli)$/, replacement: path.join(root, 'apps/$1/src/index.ts') },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT,
          // One process runs every unit file (vitest gives a 2-core machine one worker), each file using
          // the modules the files before it loaded, not a fresh fork that imports them all again: 43 to
          // 57 s against 120 to 141 on a busy 2-vCPU machine (README). The files share no state that
          // matters: they pass shuffled (`--sequence.shuffle`), and every spy and stub is undone before
          // each test.
          isolate: false,
          restoreMocks: true,
          unstubGlobals: true,
          unstubEnvs: true,
        },
      },
      { extends: true, test: { name: 'integration', include: INTEGRATION, exclude: UNIT, globalSetup: withRedis } },
      {
        extends: true,
        test: { name: 'cells', include: IN_CELLS, globalSetup: withRedis, env: { AGENTQ_TEST_CELLS: '4' } },
      },
      { extends: true, test: { name: 'e2e', include: ['tests/e2e/**/*.test.ts'], globalSetup: withRedis } },
      { extends: true, test: { name: 'browser', include: ['tests/browser/**/*.test.ts'], globalSetup: withRedis } },
      { extends: true, test: { name: 'security', include: ['tests/security/**/*.test.ts'], globalSetup: withRedis } },
      { extends: true, test: { name: 'hosts', include: ['tests/hosts/**/*.test.ts'], globalSetup: withRedis } },
    ],
  },
});
