/**
 * The intended arrows of agentq (docs/ARCHITECTURE.md), checked by `npm run deps` in CI:
 * apps -> tasks -> scheduling -> store, tasks -> core -> llm/protocol/tools, everything -> contract,
 * the dashboard -> contract and client only, the client -> contract only, and no import circle between files.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files that import each other, directly or round a loop, cannot be understood or changed one at a time.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'dashboard-imports-only-the-contract',
      severity: 'error',
      comment:
        'The dashboard runs in a browser with no bundler: it may import itself, @agentq/contract, @agentq/client, lit-html and marked (each served as is, named in its import map), nothing else.',
      from: { path: '^apps/dashboard/src/' },
      to: { pathNot: '^(apps/dashboard/src/|packages/(contract|client)/|node_modules/(lit-html|marked)/)' },
    },
    {
      name: 'client-imports-only-the-contract',
      severity: 'error',
      comment:
        'The client runs in browsers and any program: it depends on the shared contract alone, never on the server.',
      from: { path: '^packages/client/src/', pathNot: '\\.test\\.ts$' },
      to: { pathNot: '^packages/(client|contract)/' },
    },
    {
      name: 'contract-imports-nothing',
      severity: 'error',
      comment: 'The contract is shared by the browser and every process: no dependency of its own.',
      from: { path: '^packages/contract/src/', pathNot: '\\.test\\.ts$' },
      to: { pathNot: '^packages/contract/' },
    },
    {
      name: 'core-knows-no-queue-nor-redis',
      severity: 'error',
      comment: 'The agent loop runs against a journal interface; the tasks package implements it over Redis.',
      from: { path: '^packages/core/src/' },
      to: { path: '^(packages/(store|scheduling|tasks|config)/|apps/)|node_modules/(ioredis|bullmq)/' },
    },
    {
      name: 'store-is-storage-only',
      severity: 'error',
      comment:
        'The store holds records, keys, indexes, events and their scripts: it knows nothing of queues, the task service or the loop.',
      from: { path: '^packages/store/src/', pathNot: '\\.test\\.ts$' },
      to: { path: '^packages/(scheduling|tasks|core|llm|config|telemetry)/|node_modules/bullmq/' },
    },
    {
      name: 'scheduling-knows-no-task-service',
      severity: 'error',
      comment:
        'Scheduling decides which job runs next; what a task is and how it changes is the task service above it.',
      from: { path: '^packages/scheduling/src/' },
      to: { path: '^packages/(tasks|core|llm|config|telemetry)/' },
    },
    {
      name: 'tasks-reads-the-config-in-compose-only',
      severity: 'error',
      comment:
        'The task service takes its settings as options: compose.ts alone builds them from the configuration (one place, with no defaults of its own).',
      from: { path: '^packages/tasks/src/', pathNot: '^packages/tasks/src/compose\\.ts$' },
      to: { path: '^packages/config/' },
    },
    {
      name: 'leaf-packages-stay-leaves',
      severity: 'error',
      comment:
        'The model client, the tool protocol, the tools and the telemetry know nothing of the loop, the queue or the config.',
      from: { path: '^packages/(llm|protocol|tools|telemetry)/src/' },
      to: { path: '^packages/(core|store|scheduling|tasks|config)/|node_modules/(ioredis|bullmq)/' },
    },
    {
      name: 'api-reads-no-redis-keys',
      severity: 'error',
      comment:
        "Routes parse, call the task service or the store, and map the result: the key layout is the store's alone.",
      from: { path: '^apps/api/src/routes/' },
      to: { path: '^packages/store/src/keys\\.ts$|node_modules/ioredis/' },
    },
    {
      name: 'every-import-resolves',
      severity: 'error',
      comment:
        'An import that cannot be found (a typo, a package not built or not declared) would hide the arrows above.',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'packages-never-import-apps',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    // Another package is entered through its built files: its edges stop there (its own sources are cruised).
    doNotFollow: { path: ['node_modules', '/dist/'] },
    tsPreCompilationDeps: true,
    combinedDependencies: true,
    // Packages' `exports` maps as Node reads them for an ESM import (the MCP SDK's subpaths are only there).
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'] },
  },
};
