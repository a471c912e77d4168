/**
 * What the API and the workers build alike comes from one place (packages/tasks/src/compose.ts) and from
 * the configuration alone: with every setting it reads changed from its default, each part gets the
 * configuration's value. A default repeated there (or a value left out and defaulted further down, as
 * create-app.ts once did for the room, the subtasks, the data folder and the streams) fails this.
 */
import { loadConfig, poolNames, taskWorkdir, workRoot } from '@agentq/config';
import { installSettings } from '@agentq/tasks';
import { expect, it } from 'vitest';
import { tenantsEnv } from '../helpers/config-file.js';

const MiB = 1024 * 1024;

/** A configuration none of whose settings for the shared parts is a default. */
function changedConfig() {
  return loadConfig({
    env: {
      AGENTQ_REDIS_PREFIX: 'roots',
      AGENTQ_CELLS: '3',
      AGENTQ_RETENTION_HOURS: '5',
      AGENTQ_COMMIT_REPLICAS: '2',
      AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS: '700',
      AGENTQ_FAIR_BACKLOG: '13',
      AGENTQ_REDIS_FULL_PERCENT: '55',
      AGENTQ_TASK_DISK_MB: '9',
      AGENTQ_DATA_DIR: '/srv/agentq-roots',
      ...tenantsEnv({
        '*': {
          limits: { unfinished: 30, stored: 40, schedules: 6, perConcurrencyKey: 2, mb: 3, tokensPerDay: 500 },
        },
        acme: { keys: ['acme-key-of-the-roots-test'], weight: 3, limits: { unfinished: 8 } },
      }),
    },
  });
}

it('takes every setting of the shared parts from the configuration, none from a default of its own', () => {
  const config = changedConfig();
  const settings = installSettings(config);
  expect(settings).toMatchObject({
    prefix: 'roots',
    cells: 3,
    store: {
      retentionMs: 5 * 3600 * 1000,
      durability: { replicas: 2, timeoutMs: 700 },
      tenantMaxBytes: { '*': 3 * MiB },
      tenantLimits: { '*': { tokens: 500 }, acme: { tokens: 500 } },
    },
    queues: { pools: poolNames(config), fair: { backlog: 13, weights: { acme: 3 } } },
    redisFullPercent: 55,
    diskQuota: { bytes: 9 * MiB },
  });
  // A tenant's own limits, and `*`'s for what it and any other tenant leave out.
  expect(settings.room('acme')).toEqual({ unfinished: 8, stored: 40, bytes: 3 * MiB });
  expect(settings.room('other')).toEqual({ unfinished: 30, stored: 40, bytes: 3 * MiB });
  expect(settings.concurrencyLimitOf('other')).toBe(2);
  expect(settings.scheduleLimitOf('other')).toBe(6);
  // Only a tenant a key names is still in the file (its schedules fire).
  expect([settings.tenantActive('acme'), settings.tenantActive('default')]).toEqual([true, false]);
  expect(workRoot(config)).toBe('/srv/agentq-roots/work');
  expect(taskWorkdir(config, 'a1b2')).toBe('/srv/agentq-roots/work/a1b2');
});

it('differs from the defaults in each of those settings, so none of them can be a default', () => {
  const changed = installSettings(changedConfig());
  const defaults = installSettings(loadConfig({ env: {} }));
  const shown = (settings: typeof changed) => ({
    prefix: settings.prefix,
    cells: settings.cells,
    store: settings.store,
    fair: settings.queues.fair,
    redisFullPercent: settings.redisFullPercent,
    diskQuota: settings.diskQuota,
    room: settings.room('other'),
    concurrency: settings.concurrencyLimitOf('other'),
    schedules: settings.scheduleLimitOf('other'),
  });
  const a = shown(changed);
  const b = shown(defaults);
  const same = (Object.keys(a) as Array<keyof typeof a>).filter(
    (key) => JSON.stringify(a[key]) === JSON.stringify(b[key]),
  );
  expect(same).toEqual([]);
});
